/**
 * A worker's jobs and token never outlive it (issue 29, items 9 and 10), end to end: `corral serve` (the built
 * binary) with the `local` runtime and the RunPod protocol test worker (test/fixtures/worker/runpod-worker.mjs).
 * - Item 9 as filed: a `maxNum` 2 queue endpoint scales its idle worker down; the worker's process outlives its stop
 *   signal with its take still open (SIGTERM_LINGER_MS), and a 4 s job is submitted meanwhile. The job must not go
 *   to the leaving worker (which would exit holding it, the job IN_PROGRESS until the 35 s lostAfter): it completes
 *   on another worker well under lostAfter.
 * - Item 10: the removed worker's own token (read from its process's environment) no longer takes or pings: 401 on
 *   the worker-facing listener. And after kill -9 of `corral serve`, an adopted idle worker stays until its
 *   `freeTimeout` (20 s) has passed since the restart; it was removed "scaled down" at the first pass.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { callJobs } from '../support/jobs-client.js';
import {
  callApi,
  localRuntimeArgs,
  printServeLog,
  type ServeProcess,
  startServe,
} from '../support/process.js';

const KEY = 'e2e-worker-departures-key-0123456789';
const RUNPOD_WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));
const LOST_AFTER_S = 35;

/** The environment of the running process of this worker (the local runtime runs it as a host process). */
function workerEnv(workerId: string): Record<string, string> | undefined {
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let text: string;
    try {
      text = readFileSync(`/proc/${pid}/environ`, 'utf8');
    } catch {
      continue;
    }
    const env = Object.fromEntries(
      text
        .split('\0')
        .filter((line) => line.includes('='))
        .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
    );
    if (env.RUNPOD_POD_ID === workerId && env.RUNPOD_AI_API_KEY) return env;
  }
  return undefined;
}

describe("a worker's jobs and token never outlive it", () => {
  let dataDir: string;
  let server: ServeProcess;
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  const api = (path: string, body?: unknown) => callApi(server, KEY, path, body);
  const workersOf = async (id: string) =>
    (await api(`endpoint?id=${id}`)).body.endpoint.workers as { id: string; state: { state: string } }[];
  const jobs = (endpoint: string, method: string, path: string, body?: unknown) =>
    callJobs(server.gatewayUrl, KEY, { method, endpoint, path, body });
  const until = <T>(check: () => T | Promise<T>, timeoutMs = 60_000) =>
    vi.waitFor(check, { timeout: timeoutMs, interval: 100 });

  const serve = async () => {
    server = await startServe([...localRuntimeArgs('h100-80g:2'), '--config', join(dataDir, 'corral.yaml')], {
      CORRAL_DATA_DIR: dataDir,
      CORRAL_API_KEY: KEY,
    });
  };

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-departures-'));
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      // A reconcile pass every 200 ms (1 s by default): scale-downs and replacements come sooner.
      `controller: { reconcileIntervalMs: 200 }\njobs:\n  lostAfterSeconds: ${LOST_AFTER_S}\n  takeHoldSeconds: 20\n`,
    );
    await serve();
  }, 60_000);

  afterAll(async () => {
    await server?.stop();
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('a job submitted while a scaled-down worker is leaving runs on another worker at once, and the removed worker token is refused', async () => {
    const created = await api('endpoint/create', {
      endpoint: {
        name: 'departures',
        type: 'queue',
        workerConfig: { minNum: 0, maxNum: 2, freeTimeout: 2, maxConcurrent: 1, gpuNum: 1 },
        image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${RUNPOD_WORKER}'` },
        envs: [
          { key: 'RUNPOD_PING_INTERVAL', value: '1000' },
          { key: 'SIGTERM_LINGER_MS', value: '3000' },
        ],
      },
    });
    expect(created.status, created.text).toBe(200);
    const endpointId = created.body.id as string;
    try {
      const first = await jobs(endpointId, 'POST', 'runsync', { input: { sleepMs: 10 } });
      expect(first.body, JSON.stringify(first.body)).toMatchObject({ status: 'COMPLETED' });
      const leaving = first.body.output.worker as string;
      const env = workerEnv(leaving);
      if (!env) throw new Error(`no process of worker ${leaving}`);
      const headers = { authorization: env.RUNPOD_AI_API_KEY ?? '' };
      const takeUrl = `${(env.RUNPOD_WEBHOOK_GET_JOB ?? '').replaceAll('$ID', leaving)}&job_in_progress=0`;
      const pingUrl = (env.RUNPOD_WEBHOOK_PING ?? '').replaceAll('$RUNPOD_POD_ID', leaving);
      expect((await fetch(pingUrl, { headers })).status).toBe(200);

      // Idle past freeTimeout: scaled down. Its process lingers 3 s after its stop signal, its take open (shorter than the job).
      await until(async () => {
        const state = (await workersOf(endpointId)).find((w) => w.id === leaving)?.state.state;
        expect(['draining', 'stopped']).toContain(state);
      }, 30_000);
      const submitted = Date.now();
      const run = await jobs(endpointId, 'POST', 'run', { input: { sleepMs: 4000 } });
      expect(run.status).toBe(200);
      const done = await until(async () => {
        const status = await jobs(endpointId, 'GET', `status/${run.body.id}`);
        expect(status.body.status).toBe('COMPLETED');
        return status.body;
      }, 60_000);
      const tookMs = Date.now() - submitted;
      // A cold start and the 4 s job; never the lost-worker timeout.
      expect(tookMs).toBeLessThan((LOST_AFTER_S * 1000) / 2);
      expect(done.output.worker).not.toBe(leaving);

      // Gone: its token takes nothing and pings nothing any more.
      await until(async () => expect((await workersOf(endpointId)).map((w) => w.id)).not.toContain(leaving));
      for (const url of [takeUrl, pingUrl]) {
        const answer = await fetch(url, { headers });
        expect(answer.status).toBe(401);
        expect(await answer.text()).toContain('has ended');
      }
    } finally {
      await api('endpoint/delete', { id: endpointId });
    }
  }, 120_000);
  it('keeps an idle worker adopted after kill -9 of corral serve until its freeTimeout has passed since the restart', async () => {
    const created = await api('endpoint/create', {
      endpoint: {
        name: 'adopted-idle',
        type: 'queue',
        workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 20, maxConcurrent: 1, gpuNum: 1 },
        image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${RUNPOD_WORKER}'` },
        envs: [{ key: 'RUNPOD_PING_INTERVAL', value: '1000' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    const endpointId = created.body.id as string;
    try {
      const ran = await jobs(endpointId, 'POST', 'runsync', { input: { sleepMs: 10 } });
      expect(ran.body, JSON.stringify(ran.body)).toMatchObject({ status: 'COMPLETED' });
      const worker = ran.body.output.worker as string;
      server.child.kill('SIGKILL');
      await new Promise((resolve) => server.child.once('exit', resolve));
      await serve();
      const restarted = Date.now();
      // Adopted (the same worker, not a new one), and still there well into its freeTimeout.
      await until(async () => {
        const listed = await workersOf(endpointId);
        expect(listed.map((w) => [w.id, w.state.state])).toEqual([[worker, 'running']]);
      }, 15_000);
      while (Date.now() - restarted < 12_000) {
        expect((await workersOf(endpointId)).map((w) => w.id)).toEqual([worker]);
        await new Promise((resolve) => setTimeout(resolve, 500));
      }
      // Then scaled down, idle for its freeTimeout counted from the adoption.
      await until(async () => expect(await workersOf(endpointId)).toEqual([]), 30_000);
      expect(Date.now() - restarted).toBeGreaterThanOrEqual(18_000);
    } finally {
      await api('endpoint/delete', { id: endpointId });
    }
  }, 120_000);
});
