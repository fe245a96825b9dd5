/**
 * Failing fast and surviving engine outages, end to end: `corral serve` as a process on the Docker runtime, through
 * an engine proxy the test owns (the machine's dockerd is never stopped). An image that does not exist and an app
 * that exits at start get their 503 with the reason instead of hanging; an engine outage under light load shows in
 * the states within seconds, refuses what needs a new worker, keeps the running worker serving, logs once per
 * change, and recovers by itself without duplicate containers.
 */
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { EngineProxy, HIDDEN_PREFIX } from '../support/engine-proxy.js';
import { integrationAvailable } from '../support/integration.js';
import { printServeLog, type ServeProcess, startServe } from '../support/process.js';
import {
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../support/test-image.js';

const KEY = 'e2e-operator-key-0123456789';
const PREFIX = '/gpu-instance/openapi/v1';
const RUN = randomUUID().slice(0, 8);
const RUN_LABEL: [string, string] = ['corral-test-run', `failfast-${RUN}`];
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

interface Answer {
  status: number;
  body: any;
  ms: number;
  at: number;
}

/** Retries `check` (it throws until it passes) for at most `timeoutMs`. */
function until<T>(check: () => T | Promise<T>, timeoutMs: number): Promise<T> {
  return vi.waitFor(check, { timeout: timeoutMs, interval: 100 });
}

/** This run's containers with the label (all states), through the machine's own engine. */
function containers(label: string, status?: string): string[] {
  const hidden = label.replace('corral.dev/', HIDDEN_PREFIX);
  const filters = ['--filter', `label=${hidden}`, '--filter', `label=${RUN_LABEL[0]}=${RUN_LABEL[1]}`];
  if (status) filters.push('--filter', `status=${status}`);
  const out = execFileSync('docker', ['ps', '-a', '-q', '--no-trunc', ...filters], { encoding: 'utf8' });
  return out.split('\n').filter((line) => line !== '');
}

describe.runIf(withDocker)('failing fast and engine outages, with corral serve as a process', () => {
  let dataDir: string;
  let image: string;
  let server: ServeProcess;
  let engine: EngineProxy;
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  const call = async (path: string, body?: unknown) => {
    const response = await fetch(`${server.apiUrl}${PREFIX}/${path}`, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: response.status, body: (await response.json()) as any };
  };
  const endpointOf = async (id: string) => (await call(`endpoint?id=${id}`)).body.endpoint;
  /** A request to the endpoint's URL through the gateway (path form), timed. */
  const invoke = async (appName: string, path = '/work'): Promise<Answer> => {
    const started = Date.now();
    const response = await fetch(`${server.gatewayUrl}/e/${appName}${path}`, {
      headers: { authorization: `Bearer ${KEY}` },
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    let body: unknown = text;
    try {
      body = JSON.parse(text);
    } catch {}
    return { status: response.status, body, ms: Date.now() - started, at: Date.now() };
  };
  const create = async (overrides: Record<string, unknown>) => {
    const { status, body } = await call('endpoint/create', {
      endpoint: {
        ...testWorkerEndpoint(image),
        ...overrides,
      },
    });
    expect(status, JSON.stringify(body)).toBe(200);
    const endpoint = await endpointOf(body.id);
    return { id: body.id as string, appName: endpoint.appName as string };
  };
  /** When the endpoint's log first recorded `failed (<code>)`. */
  const failedAt = async (id: string, code: string): Promise<number> => {
    const { body } = await call(`endpoint/log?id=${id}&limit=1000`);
    const event = body.events.find((e: any) => e.type === 'state' && e.data?.error === code);
    expect(event, JSON.stringify(body.events)).toBeDefined();
    return Date.parse(event.at);
  };
  const logLines = () =>
    server
      .stdout()
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as { level: number; msg: string; time: number; err?: unknown });

  beforeAll(async () => {
    image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-failfast-'));
    writeFileSync(join(dataDir, 'corral.yaml'), 'controller: { startupTimeoutSeconds: 30 }\n');
    engine = new EngineProxy({ socketPath: join(tmpdir(), `corral-failfast-${RUN}.sock`), label: RUN_LABEL });
    await engine.start();
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:4', '--config', join(dataDir, 'corral.yaml')],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY, DOCKER_HOST: engine.dockerHost },
    );
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    await engine?.stop();
    if (server) removeInstallationResources(server.installationId);
    const left = containers(`${RUN_LABEL[0]}=${RUN_LABEL[1]}`);
    if (left.length > 0) execFileSync('docker', ['rm', '-f', '-v', ...left], { stdio: 'ignore' });
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('an image that does not exist: a request gets 503 naming IMAGE_PULL_FAILED within 5 s of the failure', async () => {
    const missing = `corral-does-not-exist-${RUN}:nope`;
    const { id, appName } = await create({ image: { image: missing } });
    // Sent before the pull has failed: it waits, then gets the answer the moment the failure is known.
    const queued = await invoke(appName);
    expect(queued.status).toBe(503);
    expect(queued.body).toMatchObject({
      reason: 'ENDPOINT_FAILED',
      metadata: { endpointError: 'IMAGE_PULL_FAILED', lastWorkerMessage: expect.stringContaining(missing) },
    });
    expect(queued.body.message).toContain('IMAGE_PULL_FAILED');
    expect(queued.body.message).toContain(missing);
    const known = await failedAt(id, 'IMAGE_PULL_FAILED');
    expect(queued.at - known).toBeLessThan(5_000);
    // A request afterwards is answered at once.
    const later = await invoke(appName);
    expect([later.status, later.body.reason]).toEqual([503, 'ENDPOINT_FAILED']);
    expect(later.ms).toBeLessThan(1_000);
    console.log(
      `pull failure: queued request answered ${queued.at - known} ms after the failure was recorded; a later one in ${later.ms} ms`,
    );
    await call('endpoint/delete', { id });
  }, 60_000);

  it('an app that exits at start: a waiting request gets 503 naming CRASH_LOOP once the crash loop is decided', async () => {
    const { id, appName } = await create({ envs: [{ key: 'EXIT_ON_START', value: '3' }] });
    const answer = await invoke(appName);
    expect(answer.status).toBe(503);
    expect(answer.body).toMatchObject({
      reason: 'ENDPOINT_FAILED',
      metadata: { endpointError: 'CRASH_LOOP' },
    });
    // The last worker's word is the newest failed worker's message, as the API shows it ("worker exited with code 3").
    const failed = (await endpointOf(id)).workers.filter((w: any) => w.state.state === 'failed');
    expect(failed.map((w: any) => w.state.message)).toContain(answer.body.metadata.lastWorkerMessage);
    expect(answer.body.message).toContain(answer.body.metadata.lastWorkerMessage);
    const known = await failedAt(id, 'CRASH_LOOP');
    expect(answer.at - known).toBeLessThan(5_000);
    console.log(
      `crash loop: request waited ${answer.ms} ms in all, answered ${answer.at - known} ms after CRASH_LOOP was recorded`,
    );
    await call('endpoint/delete', { id });
  }, 120_000);

  it('an engine outage under light load: seen within seconds, fast 503s, the running worker serves, one log line per change, recovery without duplicates', async () => {
    const serving = await create({});
    const idle = await create({ workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1 } });
    const lost = await create({});
    const runningWorker = async (id: string) =>
      until(async () => {
        const endpoint = await endpointOf(id);
        const running = endpoint.workers.filter((w: any) => w.state.state === 'running' && w.healthy);
        expect(running, JSON.stringify(endpoint.workers)).toHaveLength(1);
        return running[0].id as string;
      }, 60_000);
    const kept = await runningWorker(serving.id);
    const killed = await runningWorker(lost.id);
    expect((await invoke(serving.appName)).status).toBe(200);

    // Light load on the running worker through the whole outage: 10 requests a second.
    const answers: Answer[] = [];
    let loading = true;
    const load = (async () => {
      while (loading) {
        answers.push(
          await invoke(serving.appName).catch((error: unknown) => ({
            status: 0,
            body: String(error),
            ms: 0,
            at: Date.now(),
          })),
        );
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    })();

    const outageLogFrom = logLines().length;
    const down = Date.now();
    await engine.stop();
    // The engine kills a worker meanwhile (through the machine's own socket).
    for (const container of containers(`corral.dev/worker=${killed}`, 'running')) {
      execFileSync('docker', ['kill', container], { stdio: 'ignore' });
    }
    const seen = await until(async () => {
      const endpoint = await endpointOf(serving.id);
      expect(endpoint.state.message).toMatch(/container engine unreachable since \d\d:\d\d:\d\d UTC: /);
      const worker = endpoint.workers.find((w: any) => w.id === kept);
      expect(worker?.state).toMatchObject({
        state: 'running',
        message: expect.stringContaining('unreachable'),
      });
      expect((await endpointOf(idle.id)).state).toMatchObject({
        state: 'failed',
        error: 'RUNTIME_UNAVAILABLE',
      });
      return Date.now() - down;
    }, 10_000);
    expect(seen).toBeLessThan(5_000);
    // A request that needs a new worker is refused at once, with the reason.
    const refused = await invoke(idle.appName);
    expect([refused.status, refused.body.reason]).toEqual([503, 'RUNTIME_UNAVAILABLE']);
    expect(refused.body.message).toContain('container engine unreachable');
    expect(refused.ms).toBeLessThan(1_000);
    // The killed worker fails its health checks and leaves routing; its endpoint is refused too, not hung.
    const lostRefused = await until(async () => {
      const answer = await invoke(lost.appName);
      expect([answer.status, answer.body.reason]).toEqual([503, 'RUNTIME_UNAVAILABLE']);
      return answer;
    }, 20_000);
    expect(lostRefused.ms).toBeLessThan(1_000);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, 15_000 - (Date.now() - down))));
    const outageLines = logLines().slice(outageLogFrom);

    await engine.start();
    const up = Date.now();
    await until(async () => {
      expect((await endpointOf(serving.id)).state).toMatchObject({ state: 'serving', error: '' });
      expect((await endpointOf(idle.id)).state).toMatchObject({ state: 'serving', error: '' });
    }, 10_000);
    const replacement = await runningWorker(lost.id);
    const recovered = Date.now() - up;
    loading = false;
    await load;

    // The worker that kept answering served every request; it was kept, the killed one replaced, none duplicated.
    const failures = answers.filter((a) => a.status !== 200);
    expect(failures.map((a) => [a.status, a.body])).toEqual([]);
    expect(answers.length).toBeGreaterThan(50);
    expect(await runningWorker(serving.id)).toBe(kept);
    expect(replacement).not.toBe(killed);
    expect(containers(`corral.dev/endpoint=${serving.id}`)).toHaveLength(1);
    await until(() => expect(containers(`corral.dev/endpoint=${lost.id}`)).toHaveLength(1), 20_000);
    expect(containers(`corral.dev/endpoint=${lost.id}`, 'running')).toHaveLength(1);
    // A wake from zero works again.
    expect((await invoke(idle.appName)).status).toBe(200);

    // The log: one line when the engine went away, one when it came back; no flood, no stack traces.
    const lines = logLines().slice(outageLogFrom);
    const said = (text: string) => lines.filter((l) => l.msg.startsWith(text)).length;
    expect(said('container engine unreachable')).toBe(1);
    expect(said('container engine reachable again')).toBe(1);
    const loud = outageLines.filter((l) => l.level >= 40);
    expect(loud.length, JSON.stringify(loud)).toBeLessThanOrEqual(4);
    expect(loud.filter((l) => l.err !== undefined)).toEqual([]);
    console.log(
      `engine outage: states said so after ${seen} ms; refused in ${refused.ms} ms; ${answers.length} requests to the running worker, ${failures.length} failed; recovered (killed worker replaced) ${recovered} ms after the engine returned; ${loud.length} warn/error lines during 15 s of outage`,
    );
  }, 240_000);
});
