/**
 * Issue 10, items 1 and 6, against `corral serve` as a process: an installed but silent Docker engine is waited for
 * (never replaced by host processes), the local runtime is single-tenant and refuses root, the data directory's
 * modes, and a secret reaching a Docker worker's env through `{{ CORRAL_SECRET_name }}` without showing anywhere else.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import {
  callApi,
  serveLogLines as logLines,
  printServeLog,
  runCorral,
  type ServeProcess,
  startServe,
} from '../support/process.js';
import {
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../support/test-image.js';

const OPERATOR_KEY = 'e2e-host-safety-operator-key-0123';
const isRoot = process.getuid?.() === 0;

const call = callApi;

async function healthz(server: ServeProcess) {
  return (await (await fetch(`${server.apiUrl}/healthz`)).json()) as {
    status: string;
    ready: boolean;
    waitingFor?: string;
  };
}

const modeOf = (path: string) => (statSync(path).mode & 0o777).toString(8);

/** A non-admin key of a new owner, made with the CLI on the server's store. */
async function tenantKey(env: NodeJS.ProcessEnv, owner: string): Promise<string> {
  const created = await runCorral(['keys', 'create', '--owner', owner, '--name', 'tenant'], env);
  expect(created.code, created.stderr).toBe(0);
  return created.stdout.trim();
}

const hostCommandBody = (marker: string) => ({
  endpoint: {
    image: { image: 'debian:bookworm-slim', command: `sh -c "touch ${marker}; sleep 60"` },
    ports: [{ port: 8000 }],
    workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1 },
    products: [{ id: 'h100-80g' }],
  },
});

describe('no host execution by accident, and the data directory kept private', () => {
  let dataDir: string;
  let server: ServeProcess | undefined;
  const env = () => ({ CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: OPERATOR_KEY });

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-host-'));
  });
  afterEach(async ({ task }) => {
    if (task.result?.state === 'fail') printServeLog(server);
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    server = undefined;
  });
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('with DOCKER_HOST at a socket that never answers, serve waits for it and runs nothing on the host', async () => {
    const socketDir = mkdtempSync(join(tmpdir(), 'corral-e2e-silent-'));
    const socketPath = join(socketDir, 'docker.sock');
    const held: Socket[] = [];
    // Accepts connections and never answers, as a hung engine does.
    const silent: Server = createServer((socket) => held.push(socket));
    await new Promise<void>((resolve) => silent.listen(socketPath, resolve));
    const marker = join(socketDir, 'ran-on-the-host');
    try {
      server = await startServe(['--gpus', 'h100-80g:1', '--data-dir', join(dataDir, 'silent')], {
        CORRAL_API_KEY: OPERATOR_KEY,
        DOCKER_HOST: `unix://${socketPath}`,
      });
      const waiting = logLines(server).filter((l) => /^waiting for the Docker engine/.test(l.msg));
      expect(waiting).toEqual([
        expect.objectContaining({
          level: 40,
          engine: socketPath,
          because: `DOCKER_HOST is set (unix://${socketPath})`,
          msg: expect.stringContaining('choose --runtime local explicitly'),
        }),
      ]);
      expect(logLines(server).find((l) => l.msg === 'corral API listening')).toMatchObject({
        runtime: 'docker',
      });
      expect(server.stdout()).not.toContain('LOCAL RUNTIME');
      expect(await healthz(server)).toEqual({
        status: 'ok',
        ready: false,
        waitingFor: `the Docker engine at ${socketPath}`,
      });

      const bob = await tenantKey({ CORRAL_DATA_DIR: join(dataDir, 'silent') }, 'bob');
      const created = await call(server, bob, 'endpoint/create', hostCommandBody(marker));
      expect(created.status).toBe(200);
      // Several controller intervals and engine probes later, nothing has run anywhere.
      await new Promise((resolve) => setTimeout(resolve, 5_000));
      expect(existsSync(marker)).toBe(false);
      const got = await call(server, bob, `endpoint?id=${created.body.id}`);
      expect(got.body.endpoint.workers).toEqual([]);
      expect((await healthz(server)).ready).toBe(false);
      // Said once, not once per probe.
      expect(logLines(server).filter((l) => /^waiting for the Docker engine/.test(l.msg))).toHaveLength(1);
    } finally {
      for (const socket of held) socket.destroy();
      silent.close();
      rmSync(socketDir, { recursive: true, force: true });
    }
  }, 60_000);

  it.runIf(isRoot)(
    'the local runtime as root without --local-allow-root runs the server but no worker, and says why in one line',
    async () => {
      server = await startServe(['--runtime', 'local', '--gpus', 'h100-80g:1'], env());
      const refusals = logLines(server).filter((l) => l.msg.startsWith('refusing the local runtime as root'));
      expect(refusals).toHaveLength(1);
      expect(refusals[0]?.msg).toMatch(
        /^refusing the local runtime as root: .*would run as root on this host.*--local-allow-root \(CORRAL_LOCAL_ALLOW_ROOT=1\)/,
      );
      const marker = join(dataDir, 'root-ran-here');
      const created = await call(server, OPERATOR_KEY, 'endpoint/create', hostCommandBody(marker));
      expect(created.status, created.text).toBe(200);
      await vi.waitFor(
        async () => {
          const got = await call(server as ServeProcess, OPERATOR_KEY, `endpoint?id=${created.body.id}`);
          const messages = got.body.endpoint.workers.map((w: any) => w.state.message);
          expect(
            messages.some((m: string) => m.includes('refusing the local runtime as root')),
            got.text,
          ).toBe(true);
        },
        { timeout: 20_000, interval: 200 },
      );
      expect(existsSync(marker)).toBe(false);
      await server.stop();
      server = undefined;
    },
    60_000,
  );

  it('the local runtime warns at start and lets only admin keys create endpoints', async () => {
    server = await startServe(
      ['--runtime', 'local', '--gpus', 'h100-80g:1', ...(isRoot ? ['--local-allow-root'] : [])],
      env(),
    );
    expect(logLines(server).find((l) => l.msg.startsWith('LOCAL RUNTIME'))).toMatchObject({
      level: 40,
      runtime: 'local',
      asRoot: isRoot,
    });
    expect((await healthz(server)).ready).toBe(true);
    const marker = join(dataDir, 'tenant-ran-here');
    const carol = await tenantKey(env(), 'carol');
    const refused = await call(server, carol, 'endpoint/create', hostCommandBody(marker));
    expect(refused.status).toBe(403);
    expect(refused.body.reason).toBe('RUNTIME_SINGLE_TENANT');
    const admin = await call(server, OPERATOR_KEY, 'endpoint/create', {
      endpoint: { ...hostCommandBody(marker).endpoint, workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1 } },
    });
    expect(admin.status).toBe(200);
    expect(existsSync(marker)).toBe(false);
  }, 60_000);

  it('creates the data directory 0700 and the key and database 0600, and tightens looser ones at start', async () => {
    const fresh = join(dataDir, 'modes');
    const freshEnv = { CORRAL_DATA_DIR: fresh, CORRAL_API_KEY: OPERATOR_KEY };
    server = await startServe(['--runtime', 'fake'], freshEnv);
    await call(server, OPERATOR_KEY, 'secret/save', { name: 'probe', value: 'x' });
    const files = ['corral.db', 'corral.db-wal', 'corral.db-shm', 'secret.key'];
    expect(modeOf(fresh)).toBe('700');
    expect(Object.fromEntries(files.map((f) => [f, modeOf(join(fresh, f))]))).toEqual(
      Object.fromEntries(files.map((f) => [f, '600'])),
    );
    expect(server.stdout()).not.toContain('tightened the mode');
    await server.stop();

    chmodSync(fresh, 0o755);
    for (const f of ['corral.db', 'secret.key']) chmodSync(join(fresh, f), 0o644);
    server = await startServe(['--runtime', 'fake'], freshEnv);
    const tightened = logLines(server).filter((l) => l.msg.startsWith('tightened the mode of a data file'));
    expect(tightened.map((l) => [l.path, l.from, l.to])).toEqual([
      [fresh, '755', '700'],
      [join(fresh, 'secret.key'), '644', '600'],
      [join(fresh, 'corral.db'), '644', '600'],
    ]);
    expect(modeOf(fresh)).toBe('700');
    for (const f of files) expect(modeOf(join(fresh, f)), f).toBe('600');
  }, 60_000);
});

const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

describe.runIf(withDocker)('a secret in a Docker worker env, and nowhere else', () => {
  let dataDir: string;
  let image: string;
  let server: ServeProcess | undefined;
  const SECRET_VALUE = 'hf_e2e_secret_5d1c9a7b';

  beforeAll(async () => {
    image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-secret-'));
    writeFileSync(join(dataDir, 'corral.yaml'), 'controller: { reconcileIntervalMs: 200 }\n');
  }, 180_000);
  afterAll(async () => {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('the worker gets the value through {{ CORRAL_SECRET_name }}; logs, get and list show no value', async ({
    onTestFailed,
  }) => {
    const env = { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: OPERATOR_KEY };
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:1', '--config', join(dataDir, 'corral.yaml')],
      env,
    );
    const running = server;
    onTestFailed(() => printServeLog(running));
    const dora = await tenantKey(env, 'dora');
    const saved = await runCorral(
      ['secrets', 'set', 'hf_token', '--api-url', server.apiUrl],
      { CORRAL_API_KEY: dora },
      `${SECRET_VALUE}\n`,
    );
    expect(saved.code, saved.stderr).toBe(0);
    expect(saved.stdout + saved.stderr).not.toContain(SECRET_VALUE);

    const created = await call(server, dora, 'endpoint/create', {
      endpoint: {
        ...testWorkerEndpoint(image),
        envs: [{ key: 'CORRAL_TEST_TOKEN', value: 'Bearer {{  CORRAL_SECRET_hf_token }}' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    const endpoint = await vi.waitFor(
      async () => {
        const got = await call(server as ServeProcess, dora, `endpoint?id=${id}`);
        const ready = got.body.endpoint.workers.filter((w: any) => w.state.state === 'running');
        expect(ready, got.text).toHaveLength(1);
        return got;
      },
      { timeout: 60_000, interval: 250 },
    );
    const workerId = endpoint.body.endpoint.workers[0].id as string;
    const ports = execFileSync(
      'docker',
      ['ps', '--filter', `label=corral.dev/worker=${workerId}`, '--format', '{{.Ports}}'],
      {
        encoding: 'utf8',
      },
    );
    const port = /127\.0\.0\.1:(\d+)->/.exec(ports)?.[1];
    const workerEnv = (await (await fetch(`http://127.0.0.1:${port}/env`)).json()) as Record<string, string>;
    expect(workerEnv.CORRAL_TEST_TOKEN).toBe(`Bearer ${SECRET_VALUE}`);

    // The endpoint keeps the reference; no answer, no CLI output and no log line holds the value.
    expect(endpoint.body.endpoint.envs).toEqual([
      { key: 'CORRAL_TEST_TOKEN', value: 'Bearer {{  CORRAL_SECRET_hf_token }}' },
    ]);
    const answers = [
      endpoint.text,
      (await call(server, dora, 'endpoints')).text,
      (await call(server, dora, 'secrets')).text,
      (await call(server, dora, `endpoint/log?id=${id}`)).text,
    ];
    const listed = await runCorral(['secrets', 'list', '--api-url', server.apiUrl], { CORRAL_API_KEY: dora });
    expect(listed.stdout).toContain('hf_token');
    const workerLog = await runCorral(
      ['logs', id, '--worker', workerId, '--tail', '50', '--api-url', server.apiUrl],
      {
        CORRAL_API_KEY: dora,
      },
    );
    expect(workerLog.code, workerLog.stderr).toBe(0);
    for (const text of [...answers, listed.stdout, workerLog.stdout, server.stdout(), server.stderr()]) {
      expect(text).not.toContain(SECRET_VALUE);
    }
    expect(logLines(server).some((l) => /: worker \S+ started$/.test(l.msg))).toBe(true);
  }, 240_000);
});
