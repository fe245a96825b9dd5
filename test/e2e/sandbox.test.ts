/**
 * Tenants stay apart on the Docker engine (issue 10, items 3 and 5), with `corral serve` as a process and two
 * owners: a worker of one owner cannot reach the other's worker nor the host's services, while the gateway
 * reaches both; the sandbox is on the container; a network storage is mountable only by its owners, read-only
 * where configured, and a setuid-root file written through it gives no privilege on the host.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { connect, createServer, type Server } from 'node:net';
import { networkInterfaces, tmpdir, totalmem } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { printServeLog, runCorral, type ServeProcess, startServe } from '../support/process.js';
import {
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../support/test-image.js';

const PREFIX = '/gpu-instance/openapi/v1';
const GIB = 1024 ** 3;
const isRoot = process.getuid?.() === 0;
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

function until<T>(check: () => T | Promise<T>, timeoutMs: number): Promise<T> {
  return vi.waitFor(check, { timeout: timeoutMs, interval: 200 });
}

function docker(...args: string[]): string {
  return execFileSync('docker', args, { encoding: 'utf8' }).trim();
}

/** The worker's container id, from its label. */
function containerOf(workerId: string): string {
  return docker('ps', '-q', '--no-trunc', '--filter', `label=corral.dev/worker=${workerId}`);
}

function inspect(workerId: string): any {
  return JSON.parse(docker('inspect', containerOf(workerId)))[0];
}

/** Where the worker's port is published on the host (127.0.0.1). */
function workerUrl(workerId: string): string {
  const port = /127\.0\.0\.1:(\d+)/.exec(docker('port', containerOf(workerId)))?.[1];
  if (!port) throw new Error(`no published port for worker ${workerId}`);
  return `http://127.0.0.1:${port}`;
}

/** The worker's address and its bridge's gateway on the worker's own network. */
function networkOf(workerId: string): { name: string; ip: string; gateway: string } {
  const info = inspect(workerId);
  const [name, settings] = Object.entries(info.NetworkSettings.Networks as Record<string, any>)[0] ?? [];
  return { name: name ?? '', ip: settings?.IPAddress, gateway: settings?.Gateway };
}

/** Asks the worker to open a TCP connection (the test worker's POST /connect). */
async function tryConnect(fromWorker: string, host: string, port: number, ms = 2000) {
  const response = await fetch(`${workerUrl(fromWorker)}/connect?host=${host}&port=${port}&ms=${ms}`, {
    method: 'POST',
  });
  return (await response.json()) as { connected: boolean; error?: string };
}

/** The host's first non-loopback IPv4 address outside Docker's bridges. */
function lanAddress(): string {
  for (const [name, addresses] of Object.entries(networkInterfaces())) {
    if (/^(lo|docker|br-|crl|veth)/.test(name)) continue;
    const v4 = addresses?.find((a) => a.family === 'IPv4' && !a.internal);
    if (v4) return v4.address;
  }
  throw new Error('no LAN address on this host');
}

function connectFromHost(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port }, () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, '0.0.0.0', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address ? address.port : 0);
    });
  });
}

describe.runIf(withDocker)('tenants on the Docker engine: sandboxed workers and owned storage', () => {
  let dataDir: string;
  let storage: string;
  let readOnlyStorage: string;
  let image: string;
  let server: ServeProcess;
  let hostService: Server;
  const keys: Record<'alice' | 'bob', string> = { alice: '', bob: '' };
  const endpoints: Record<'alice' | 'bob', { id: string; appName: string; worker: string }> = {
    alice: { id: '', appName: '', worker: '' },
    bob: { id: '', appName: '', worker: '' },
  };
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));
  const env = () => ({ CORRAL_DATA_DIR: dataDir });

  async function call(owner: 'alice' | 'bob', path: string, body?: unknown) {
    const response = await fetch(`${server.apiUrl}${PREFIX}/${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${keys[owner]}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as any };
  }

  const endpointBody = (volumeMounts: unknown[] = []) => ({
    endpoint: {
      ...testWorkerEndpoint(image),
      clusterID: 'c1',
      volumeMounts,
    },
  });

  async function runningWorker(owner: 'alice' | 'bob', id: string): Promise<string> {
    return until(async () => {
      const { body } = await call(owner, `endpoint?id=${id}`);
      const worker = body.endpoint.workers.find((w: any) => w.state.state === 'running');
      expect(worker, JSON.stringify(body.endpoint.workers)).toBeDefined();
      return worker.id as string;
    }, 60_000);
  }

  beforeAll(async () => {
    image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-sandbox-'));
    storage = mkdtempSync(join(tmpdir(), 'corral-e2e-storage-'));
    readOnlyStorage = mkdtempSync(join(tmpdir(), 'corral-e2e-storage-ro-'));
    // So that an unprivileged user can run what a worker writes there (the setuid check below).
    chmodSync(storage, 0o755);
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      [
        'controller: { startupTimeoutSeconds: 20, reconcileIntervalMs: 200 }',
        'networkStorages:',
        `  - { id: alice-data, clusterID: c1, hostPath: ${storage}, owners: [alice] }`,
        `  - { id: shared-ro, clusterID: c1, hostPath: ${readOnlyStorage}, owners: all, readOnly: true }`,
      ].join('\n'),
    );
    for (const owner of ['alice', 'bob'] as const) {
      // Before serve's first start: the key command makes the database, as asked.
      const made = await runCorral(
        ['keys', 'create', '--owner', owner, '--name', 'e2e', '--create-database'],
        env(),
      );
      expect(made.code, made.stderr).toBe(0);
      keys[owner] = /sk_[A-Za-z0-9_-]+/.exec(made.stdout)?.[0] ?? '';
      expect(keys[owner]).not.toBe('');
    }
    hostService = createServer((socket) => {
      socket.on('error', () => undefined);
      socket.end('host service\n');
    });
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:4', '--config', join(dataDir, 'corral.yaml')],
      env(),
    );
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
    hostService?.close();
    if (server) removeInstallationResources(server.installationId);
    for (const owner of ['alice', 'bob']) {
      const label = `label=corral.dev/owner=${owner}`;
      for (const id of docker('ps', '-a', '-q', '--filter', label).split('\n').filter(Boolean)) {
        spawnSync('docker', ['rm', '-f', '-v', id], { stdio: 'ignore' });
      }
      for (const id of docker('network', 'ls', '-q', '--filter', label).split('\n').filter(Boolean)) {
        spawnSync('docker', ['network', 'rm', id], { stdio: 'ignore' });
      }
    }
    // Corral leaves the nosuid bind mount in place (workers may still write there); the test takes it away.
    for (const dir of [storage, readOnlyStorage]) {
      for (let i = 0; i < 3 && spawnSync('umount', [dir], { stdio: 'ignore' }).status === 0; i++);
    }
    for (const dir of [dataDir, storage, readOnlyStorage]) rmSync(dir, { recursive: true, force: true });
  });

  it('another owner mounting a storage not shared with it is 400 STORAGE_NOT_ALLOWED; conflicting mount paths are 400', async () => {
    const refused = await call(
      'bob',
      'endpoint/create',
      endpointBody([{ type: 'network', id: 'alice-data', mountPath: '/data' }]),
    );
    expect(refused.status).toBe(400);
    expect(refused.body).toMatchObject({
      reason: 'STORAGE_NOT_ALLOWED',
      metadata: { field: 'volumeMounts.0.id', storage: 'alice-data' },
    });
    expect(refused.body.message).toContain('alice-data');

    for (const volumeMounts of [
      [
        { type: 'local', size: 1, mountPath: '/x' },
        { type: 'local', size: 1, mountPath: '/x/' },
      ],
      [{ type: 'local', size: 1, mountPath: '/' }],
      [{ type: 'local', size: 1, mountPath: '/proc' }],
      [
        { type: 'network', id: 'shared-ro', mountPath: '/models' },
        { type: 'local', size: 1, mountPath: '/models/cache' },
      ],
    ]) {
      const conflict = await call('bob', 'endpoint/create', endpointBody(volumeMounts));
      expect(conflict.status, JSON.stringify(volumeMounts)).toBe(400);
      expect(conflict.body).toMatchObject({ reason: 'INVALID_FIELD' });
      expect(conflict.body.metadata.field).toMatch(/^volumeMounts\.\d\.mountPath$/);
    }
  });

  it('runs each owner’s worker sandboxed, on a network of its own; the gateway reaches both', async () => {
    const a = await call(
      'alice',
      'endpoint/create',
      endpointBody([{ type: 'network', id: 'alice-data', mountPath: '/data' }]),
    );
    expect(a.status, JSON.stringify(a.body)).toBe(200);
    const b = await call(
      'bob',
      'endpoint/create',
      endpointBody([{ type: 'network', id: 'shared-ro', mountPath: '/shared' }]),
    );
    expect(b.status, JSON.stringify(b.body)).toBe(200);
    for (const [owner, created] of [
      ['alice', a],
      ['bob', b],
    ] as const) {
      const worker = await runningWorker(owner, created.body.id);
      const { body } = await call(owner, `endpoint?id=${created.body.id}`);
      endpoints[owner] = { id: created.body.id, appName: body.endpoint.appName, worker };
    }

    const info = inspect(endpoints.alice.worker);
    const host = info.HostConfig;
    expect(host.CapDrop).toEqual(['ALL']);
    expect((host.CapAdd as string[]).map((c) => c.replace(/^CAP_/, '')).sort()).toEqual([
      'CHOWN',
      'DAC_OVERRIDE',
      'FOWNER',
      'KILL',
      'NET_BIND_SERVICE',
      'SETGID',
      'SETUID',
    ]);
    expect(host.SecurityOpt).toContain('no-new-privileges:true');
    expect(host.PidsLimit).toBe(4096);
    // Nothing configured: each of the 4 GPUs' share of 90% of the machine, in 1/8 GiB steps.
    expect(host.Memory).toBe(Math.round((Math.floor(((totalmem() * 0.9) / 4 / GIB) * 8) / 8) * GIB));
    expect(host.LogConfig).toEqual({ Type: 'json-file', Config: { 'max-file': '3', 'max-size': '10m' } });
    expect(info.Config.Labels['corral.dev/owner']).toBe('alice');

    const alice = networkOf(endpoints.alice.worker);
    const bob = networkOf(endpoints.bob.worker);
    expect(alice.name).toMatch(/^corral-owner-alice-/);
    expect(bob.name).toMatch(/^corral-owner-bob-/);
    const options = JSON.parse(docker('network', 'inspect', alice.name))[0].Options;
    expect(options['com.docker.network.bridge.enable_icc']).toBe('false');

    // The gateway reaches both workers (through their ports published on 127.0.0.1).
    for (const owner of ['alice', 'bob'] as const) {
      const response = await fetch(`${server.gatewayUrl}/e/${endpoints[owner].appName}/env`, {
        headers: { authorization: `Bearer ${keys[owner]}` },
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as any).CORRAL_ENDPOINT_ID).toBe(endpoints[owner].id);
    }
  }, 120_000);

  it("a worker of bob cannot connect to alice's worker, which answers its own address", async () => {
    const alice = networkOf(endpoints.alice.worker);
    // The route works: alice's worker reaches itself on its network address.
    expect(await tryConnect(endpoints.alice.worker, alice.ip, 8000)).toEqual({ connected: true });
    const attempt = await tryConnect(endpoints.bob.worker, alice.ip, 8000);
    expect(attempt.connected).toBe(false);
  }, 30_000);

  it.runIf(isRoot)(
    "workers are kept off the host's own services and 169.254.0.0/16",
    async () => {
      expect(server.stdout()).toContain('workers kept off the host');
      const port = await listen(hostService);
      const bob = networkOf(endpoints.bob.worker);
      // The bridge's gateway and the host's own LAN address, where a service listening on 0.0.0.0 answers the host.
      for (const address of [bob.gateway, lanAddress()]) {
        expect(await connectFromHost(address, port), address).toBe(true);
        expect(await tryConnect(endpoints.bob.worker, address, port), address).toEqual({
          connected: false,
          error: 'ECONNREFUSED',
        });
      }
      // Refused at once by the rule in DOCKER-USER (without it: no answer here, a timeout).
      expect(await tryConnect(endpoints.bob.worker, '169.254.169.254', 80, 3000)).toEqual({
        connected: false,
        error: 'ECONNREFUSED',
      });
    },
    30_000,
  );

  it('a setuid-root file a worker writes to its storage gives no privilege on the host', async () => {
    const written = await fetch(
      `${workerUrl(endpoints.alice.worker)}/write?path=/data/escalate&mode=4755&from=/node`,
      { method: 'POST' },
    );
    expect(await written.json()).toEqual({ path: '/data/escalate', mode: '4755', uid: 0 });
    // On the host the file is what the worker made: setuid, owned by root (root in a container is root here).
    const file = join(storage, 'escalate');
    const stat = statSync(file);
    expect(stat.uid).toBe(0);
    expect(stat.mode & 0o4000).toBe(0o4000);
    if (!isRoot) return;
    // But the host path is a nosuid,nodev mount: run as nobody, the file's program stays nobody.
    const options = execFileSync('findmnt', ['-n', '-o', 'OPTIONS', '--mountpoint', storage], {
      encoding: 'utf8',
    });
    expect(options.split(',')).toEqual(expect.arrayContaining(['nosuid', 'nodev']));
    const nobody = execFileSync('id', ['-u', 'nobody'], { encoding: 'utf8' }).trim();
    const ran = spawnSync(
      'runuser',
      ['-u', 'nobody', '--', file, '-e', 'process.stdout.write(String(process.geteuid()))'],
      {
        encoding: 'utf8',
      },
    );
    expect(ran.stdout, ran.stderr).toBe(nobody);
    expect(server.stdout()).toContain('network storage mounted nosuid,nodev');
  }, 30_000);

  it('a read-only storage is mounted read-only', async () => {
    const refused = await fetch(`${workerUrl(endpoints.bob.worker)}/write?path=/shared/x&mode=644`, {
      method: 'POST',
      body: 'x',
    });
    expect(refused.status).toBe(500);
    expect(await refused.json()).toEqual({ error: 'EROFS' });
  });

  it("an owner's network is removed once none of its workers is left", async () => {
    const { name } = networkOf(endpoints.alice.worker);
    expect((await call('alice', 'endpoint/stop', { id: endpoints.alice.id })).status).toBe(200);
    await until(() => {
      expect(docker('network', 'ls', '-q', '--filter', `name=^${name}$`)).toBe('');
    }, 30_000);
    // Bob's stays: his worker still runs on it.
    expect(
      docker('network', 'ls', '-q', '--filter', `name=^${networkOf(endpoints.bob.worker).name}$`),
    ).not.toBe('');
  }, 60_000);
});
