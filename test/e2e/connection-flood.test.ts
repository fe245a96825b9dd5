/**
 * Idle connections do not take `corral serve` down (issue 20, item 2): a real `corral serve` (the local runtime,
 * its worker the test worker as a host process) runs under an open-file limit of 2,048, and 127.0.0.1 opens
 * thousands of idle connections to both listeners, each sending a request line and one header and then waiting,
 * reopened as they are closed. Meanwhile another owner's API calls and a request through the gateway (from
 * 127.0.0.2) are served, and the worker stays healthy, the same one throughout: the connection caps leave files for
 * health probes and the database. Every flood socket is destroyed at the end.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  callApi,
  serveLogLines as logLines,
  printServeLog,
  runCorral,
  type ServeProcess,
  startServe,
} from '../support/process.js';
import { WORKER_SCRIPT } from '../support/test-image.js';

const KEY = 'e2e-connection-flood-key-0123456789';
/** The serve process's open-file limit: below the flood, so that without caps it would run out of files. */
const FILE_LIMIT = 2048;
/** Idle connections held at once per listener, from 127.0.0.1. */
const FLOOD_PER_LISTENER = 2500;
/** How long the flood is held while the checks run. */
const FLOOD_MS = 12_000;
/** How soon a flood connection the server closed (or refused) is opened again. */
const RECONNECT_MS = 2_000;
/** Where the other owner's calls come from: another loopback address, so that 127.0.0.1's cap is not theirs. */
const OTHER_CLIENT = '127.0.0.2';

/** Keeps `count` idle connections open to `port` from 127.0.0.1, reopening each one the server closes. */
class Flood {
  readonly sockets = new Set<Socket>();
  opened = 0;
  #running = true;

  constructor(
    readonly port: number,
    count: number,
  ) {
    for (let i = 0; i < count; i++) this.#open(i * 2);
  }

  #open(delayMs: number): void {
    setTimeout(() => {
      if (!this.#running) return;
      const socket = connect({ port: this.port, host: '127.0.0.1' });
      this.sockets.add(socket);
      socket.on('error', () => {});
      socket.on('connect', () => {
        this.opened += 1;
        socket.write('GET / HTTP/1.1\r\nHost: flood.localhost\r\n');
      });
      socket.resume();
      socket.on('close', () => {
        this.sockets.delete(socket);
        // Back a little later: the pressure stays while the flood runs (a refused connection comes back too).
        this.#open(RECONNECT_MS);
      });
    }, delayMs);
  }

  stop(): void {
    this.#running = false;
    for (const socket of this.sockets) socket.destroy();
  }
}

/** A GET from OTHER_CLIENT: its status and body. */
function getFrom(url: string, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      { headers, localAddress: OTHER_CLIENT, agent: false, timeout: 10_000 },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          body += chunk;
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

describe('thousands of idle connections to both listeners of corral serve', () => {
  let dataDir: string;
  let server: ServeProcess | undefined;
  const floods: Flood[] = [];

  beforeAll(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-flood-'));
    // A head within 3 s: the flood's connections are closed and reopened while it runs.
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      'connections: { api: { headersTimeoutMs: 3000 }, gateway: { headersTimeoutMs: 3000 } }\n',
    );
  });
  /** The endpoint made, deleted at the end: its worker is a host process that would outlive the server. */
  let endpointId: string | undefined;
  afterAll(async () => {
    for (const flood of floods) flood.stop();
    const running = server;
    if (running && endpointId !== undefined) {
      await callApi(running, KEY, 'endpoint/delete', { id: endpointId });
      await vi.waitFor(
        async () => expect((await callApi(running, KEY, `endpoint?id=${endpointId}`)).status).toBe(404),
        { timeout: 30_000, interval: 250 },
      );
    }
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("keep another owner's API calls, a request through the gateway and a worker's health good", async ({
    onTestFailed,
  }) => {
    onTestFailed(() => printServeLog(server));
    const env = { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY };
    server = await startServe(
      [
        '--runtime',
        'local',
        ...(process.getuid?.() === 0 ? ['--local-allow-root'] : []),
        '--gpus',
        'h100-80g:1',
        '--config',
        join(dataDir, 'corral.yaml'),
      ],
      env,
      { prefix: ['prlimit', `--nofile=1024:${FILE_LIMIT}`] },
    );
    const s = server;
    // The limit is logged, and the caps are lowered to fit under it, with a file reserve left.
    const caps = logLines(s).find((l) => l.msg === 'open-file limit and connection caps') as any;
    expect(caps).toMatchObject({ openFiles: FILE_LIMIT, openFilesHard: FILE_LIMIT });
    expect(
      caps.api.maxConnections + 2 * caps.gateway.maxConnections + caps.reservedFiles,
    ).toBeLessThanOrEqual(FILE_LIMIT);
    expect(caps.api.maxConnectionsPerClient).toBeLessThan(caps.api.maxConnections);
    expect(logLines(s).some((l) => l.msg.startsWith('connection caps lowered'))).toBe(true);

    const bob = await runCorral(['keys', 'create', '--owner', 'bob', '--name', 'bob'], env);
    expect(bob.code, bob.stderr).toBe(0);
    const bobKey = bob.stdout.trim();
    const created = await callApi(s, KEY, 'endpoint/create', {
      endpoint: {
        image: { image: 'local', command: `${process.execPath} ${WORKER_SCRIPT}` },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1 },
        // Probed every second, unhealthy at the first failure: a probe that cannot open a socket shows at once.
        healthy: { path: '/health', period: 1, timeout: 2, failureThreshold: 1 },
        products: [{ id: 'h100-80g' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    endpointId = id;
    const workers = async () => (await callApi(s, KEY, `endpoint?id=${id}`)).body.endpoint.workers as any[];
    await vi.waitFor(async () => expect((await workers()).map((w) => w.healthy)).toEqual([true]), {
      timeout: 30_000,
      interval: 250,
    });
    const [worker] = await workers();
    const appName = (await callApi(s, KEY, `endpoint?id=${id}`)).body.endpoint.appName as string;
    const gatewayPort = Number(new URL(s.gatewayUrl).port);
    const apiPort = Number(new URL(s.apiUrl).port);

    floods.push(new Flood(apiPort, FLOOD_PER_LISTENER), new Flood(gatewayPort, FLOOD_PER_LISTENER));
    await vi.waitFor(
      () => expect(Math.min(...floods.map((f) => f.opened))).toBeGreaterThanOrEqual(FLOOD_PER_LISTENER),
      { timeout: 30_000, interval: 100 },
    );
    const started = Date.now();
    const checks = { api: 0, gateway: 0, health: 0 };
    const rounds: number[][] = [];
    while (Date.now() - started < FLOOD_MS) {
      const round = [Date.now()];
      const bobs = await getFrom(`${s.apiUrl}/gpu-instance/openapi/v1/endpoints`, {
        authorization: `Bearer ${bobKey}`,
      });
      expect(bobs.status, bobs.body).toBe(200);
      checks.api += 1;
      round.push(Date.now());
      const served = await getFrom(`http://127.0.0.1:${gatewayPort}/e/${appName}/work`, {
        authorization: `Bearer ${KEY}`,
      });
      expect(served.status, served.body).toBe(200);
      checks.gateway += 1;
      round.push(Date.now());
      const now = await getFrom(`${s.apiUrl}/gpu-instance/openapi/v1/endpoint?id=${id}`, {
        authorization: `Bearer ${KEY}`,
      });
      const seen = JSON.parse(now.body).endpoint.workers.map((w: any) => [w.id, w.healthy]);
      expect(seen).toEqual([[worker.id, true]]);
      checks.health += 1;
      round.push(Date.now());
      rounds.push(round.slice(1).map((t, i) => t - (round[i] as number)));
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    process.stdout.write(`flood: ${JSON.stringify({ checks, roundMs: rounds })}\n`);
    // The flood was refused beyond the caps: the server logged it, and no file ran out.
    expect(logLines(s).some((l) => l.msg === 'connections refused at their caps')).toBe(true);
    expect(s.stdout()).not.toContain('EMFILE');
    expect(checks.api).toBeGreaterThanOrEqual(3);
    for (const flood of floods.splice(0)) flood.stop();
    // Over: the worker is still the one it was, healthy.
    expect((await workers()).map((w) => [w.id, w.healthy])).toEqual([[worker.id, true]]);
  }, 120_000);
});
