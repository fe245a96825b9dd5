// Keys on endpoint URLs (issue 10, item 2) against `corral serve` as a process with Docker workers: two owners, each
// with an endpoint whose worker answers with the headers that reached it; keyless and wrong-owner requests get 401,
// the owner's key and an invoke key get 200, the worker never sees a key; /metrics needs an admin key or the token; a
// jobsPath that climbs to the other owner's endpoint is refused (issue 29) and a job reaches its own worker alone.
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { printServeLog, runCorral, type ServeProcess, startServe } from '../support/process.js';
import { dockerAvailable, ensureTestImage, removeInstallationResources } from '../support/test-image.js';

const ADMIN_KEY = 'e2e-endpoint-keys-admin-0123456789';
const METRICS_TOKEN = 'e2e-scrape-token-0123456789';
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

/**
 * The worker: the test image's node running a server that answers every request (its health check too) with the
 * request headers it received, as JSON.
 */
const HEADERS_WORKER =
  '-e \'require("http").createServer((q, r) => r.end(JSON.stringify(q.headers))).listen(8000)\'';

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A GET through the gateway by Host (or by the path form when `pathForm`), with `authorization` when given. */
function viaGateway(
  server: ServeProcess,
  appName: string,
  authorization: string | undefined,
  pathForm = false,
): Promise<Answer> {
  const url = new URL(server.gatewayUrl);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path: pathForm ? `/e/${appName}/echo` : '/echo',
        headers: {
          host: pathForm ? url.host : `${appName}.localhost:${url.port}`,
          ...(authorization === undefined ? {} : { authorization }),
        },
        agent: false,
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

/** The status line of the gateway's answer to a WebSocket upgrade without a key. */
function keylessUpgrade(server: ServeProcess, appName: string): Promise<string> {
  const url = new URL(server.gatewayUrl);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(url.port), url.hostname);
    let text = '';
    socket.on('data', (chunk: Buffer) => {
      text += chunk.toString('latin1');
    });
    socket.on('error', reject);
    socket.on('close', () => resolve(text.split('\r\n')[0] ?? ''));
    socket.write(
      `GET /ws HTTP/1.1\r\nHost: ${appName}.localhost:${url.port}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n`,
    );
  });
}

async function api(server: ServeProcess, key: string, path: string, body?: unknown) {
  const response = await fetch(`${server.apiUrl}/gpu-instance/openapi/v1/${path}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.status, body: (await response.json()) as any };
}

describe.runIf(withDocker)('keys on endpoint URLs, with two owners, against corral serve and Docker', () => {
  let dataDir: string;
  let server: ServeProcess;
  const owners = { alice: { key: '', endpointId: '' }, bob: { key: '', endpointId: '' } };
  let image = '';
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  beforeAll(async () => {
    image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-keys-'));
    const env = { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: ADMIN_KEY, CORRAL_METRICS_TOKEN: METRICS_TOKEN };
    server = await startServe(['--runtime', 'docker', '--gpus', 'h100-80g:2'], env);
    for (const [owner, state] of Object.entries(owners)) {
      const created = await runCorral(['keys', 'create', '--owner', owner, '--name', 'e2e'], env);
      expect(created.code, created.stderr).toBe(0);
      state.key = created.stdout.trim();
      const endpoint = await api(server, state.key, 'endpoint/create', {
        endpoint: {
          appName: `${owner}-headers`,
          image: { image, command: HEADERS_WORKER },
          ports: [{ port: 8000 }],
          workerConfig: { minNum: 1, maxNum: 1, maxConcurrent: 8, freeTimeout: 60, gpuNum: 1 },
        },
      });
      expect(endpoint.status, JSON.stringify(endpoint.body)).toBe(200);
      state.endpointId = endpoint.body.id;
    }
    for (const [owner, state] of Object.entries(owners)) {
      await vi.waitFor(
        async () =>
          expect((await viaGateway(server, `${owner}-headers`, `Bearer ${state.key}`)).status).toBe(200),
        { timeout: 60_000, interval: 200 },
      );
    }
  }, 150_000);

  afterAll(async () => {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it.each(['alice', 'bob'] as const)(
    "%s's endpoint: 401 without a key and with the other owner's key, 200 with the owner's key, and the worker never sees it",
    async (owner) => {
      const other = owner === 'alice' ? 'bob' : 'alice';
      const appName = `${owner}-headers`;
      for (const pathForm of [false, true]) {
        const keyless = await viaGateway(server, appName, undefined, pathForm);
        expect(keyless.status).toBe(401);
        expect(keyless.headers['www-authenticate']).toBe('Bearer');
        expect(JSON.parse(keyless.body)).toMatchObject({ code: 401, reason: 'UNAUTHENTICATED' });
        const wrongOwner = await viaGateway(server, appName, `Bearer ${owners[other].key}`, pathForm);
        expect(wrongOwner.status).toBe(401);
        const own = await viaGateway(server, appName, `Bearer ${owners[owner].key}`, pathForm);
        expect(own.status).toBe(200);
        const seen = JSON.parse(own.body) as Record<string, string>;
        expect(seen.authorization).toBeUndefined();
        expect(own.body).not.toContain(owners[owner].key);
      }
      expect(await keylessUpgrade(server, appName)).toBe('HTTP/1.1 401 Unauthorized');
    },
    30_000,
  );

  it("an invoke key calls its endpoint (the worker never sees it), not the other's and not the API; revoked, it stops within 10 s", async () => {
    const { alice, bob } = owners;
    const created = await api(server, alice.key, 'endpoint/invoke-key/create', { id: alice.endpointId });
    expect(created.status).toBe(200);
    const invoke = created.body.key as string;
    const answer = await viaGateway(server, 'alice-headers', `Bearer ${invoke}`);
    expect(answer.status).toBe(200);
    expect(JSON.parse(answer.body).authorization).toBeUndefined();
    expect(answer.body).not.toContain(invoke);
    expect((await viaGateway(server, 'bob-headers', `Bearer ${invoke}`)).status).toBe(401);
    expect((await api(server, invoke, `endpoint?id=${alice.endpointId}`)).status).toBe(401);
    // Bob cannot see or revoke Alice's keys.
    const byBob = await api(server, bob.key, 'endpoint/invoke-key/delete', {
      id: alice.endpointId,
      keyId: created.body.id,
    });
    expect(byBob.status).toBe(404);

    const revoked = await api(server, alice.key, 'endpoint/invoke-key/delete', {
      id: alice.endpointId,
      keyId: created.body.id,
    });
    expect(revoked.status).toBe(200);
    const revokedAt = Date.now();
    await vi.waitFor(
      async () => expect((await viaGateway(server, 'alice-headers', `Bearer ${invoke}`)).status).toBe(401),
      { timeout: 15_000, interval: 250 },
    );
    // The documented bound (10 s cache), with a margin for a loaded machine.
    expect(Date.now() - revokedAt).toBeLessThan(12_000);
  }, 30_000);

  it("issue 29: a jobsPath that climbs to the other owner's endpoint is refused at create and update; a job reaches its own worker, without a key", async () => {
    const { alice } = owners;
    for (const jobsPath of [
      '/../bob-headers/x',
      '/%2e%2e/bob-headers/x',
      '/.%2e/bob-headers/x',
      '/..\\bob-headers/x',
    ]) {
      const created = await api(server, alice.key, 'endpoint/create', {
        endpoint: {
          appName: 'alice-climber',
          jobsPath,
          image: { image, command: HEADERS_WORKER },
          ports: [{ port: 8000 }],
          workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1 },
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(400);
      expect(created.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field: 'jobsPath' } });
      const updated = await api(server, alice.key, 'endpoint/update', { id: alice.endpointId, jobsPath });
      expect(updated.status, JSON.stringify(updated.body)).toBe(400);
      expect(updated.body).toMatchObject({ reason: 'INVALID_FIELD', metadata: { field: 'jobsPath' } });
    }
    const answer = await fetch(`${server.gatewayUrl}/v2/${alice.endpointId}/runsync?wait=30000`, {
      method: 'POST',
      headers: { authorization: `Bearer ${alice.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ input: { prompt: 'hi' } }),
    });
    const job = (await answer.json()) as { id: string; status: string; output: Record<string, string> };
    expect(job.status, JSON.stringify(job)).toBe('COMPLETED');
    // The worker answered with the headers that reached it: the job's, and no key (its delivery key stays at the gateway).
    expect(job.output['x-corral-job-id']).toBe(job.id);
    expect(job.output.authorization).toBeUndefined();
  }, 60_000);

  it('/metrics: 401 without a key and to an owner key, 200 to the scrape token and the admin key', async () => {
    const scrape = (authorization?: string) =>
      fetch(`${server.apiUrl}/metrics`, { headers: authorization ? { authorization } : {} });
    const keyless = await scrape();
    expect(keyless.status).toBe(401);
    expect(keyless.headers.get('www-authenticate')).toBe('Bearer');
    expect((await scrape(`Bearer ${owners.alice.key}`)).status).toBe(401);
    const byToken = await scrape(`Bearer ${METRICS_TOKEN}`);
    expect(byToken.status).toBe(200);
    expect(await byToken.text()).toContain(`endpoint="${owners.alice.endpointId}"`);
    expect((await scrape(`Bearer ${ADMIN_KEY}`)).status).toBe(200);
  });
});
