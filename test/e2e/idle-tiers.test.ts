import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { callGateway, type GatewayAnswer } from '../support/gateway-call.js';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, runCorral, type ServeProcess, startServe } from '../support/process.js';
import { dockerAvailable, ensureTestImage, removeInstallationResources } from '../support/test-image.js';

const KEY = 'e2e-idle-tiers-key-0123456789';
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

const viaGateway = (server: ServeProcess, appName: string, path: string) =>
  callGateway(server, KEY, appName, path);

function docker(args: string[]): string {
  return execFileSync('docker', args, { encoding: 'utf8' }).trim();
}

/** The ids of the endpoint's containers, running or paused. */
function containersOf(endpointId: string): string[] {
  return docker(['ps', '-q', '--filter', `label=corral.dev/endpoint=${endpointId}`])
    .split('\n')
    .filter((line) => line !== '');
}

function until<T>(check: () => T | Promise<T>, timeoutMs: number): Promise<T> {
  return vi.waitFor(check, { timeout: timeoutMs, interval: 200 });
}

/** `thaw;dur=3.2` -> 3.2, from a Server-Timing value. */
function phase(answer: GatewayAnswer, name: string): number | undefined {
  const header = String(answer.headers['server-timing'] ?? '');
  const match = new RegExp(`(?:^|, )${name};dur=([\\d.]+)`).exec(header);
  return match?.[1] === undefined ? undefined : Number(match[1]);
}

/**
 * freeTimeout (2 s) from the last request, the scale check and a pass (interval 200 ms), the drain, then
 * `docker pause`; the margin is for a loaded 2-core machine.
 */
const FROZEN_WITHIN_MS = 2_000 + 10_000;

describe.runIf(withDocker)('idle tiers on Docker, with corral serve as a process', () => {
  let dataDir: string;
  let image: string;
  let server: ServeProcess;
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  const api = (path: string, body?: unknown) => callApi(server, KEY, path, body);
  const create = async (appName: string, workerConfig: Record<string, unknown>, envs: object[] = []) => {
    const created = await api('endpoint/create', {
      endpoint: {
        appName,
        image: { image },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 1, maxConcurrent: 2, freeTimeout: 2, gpuNum: 1, ...workerConfig },
        policy: { type: 'queue', value: 1 },
        envs,
      },
    });
    expect(created.body.id, created.text).toBeDefined();
    return created.body.id as string;
  };
  /** `corral <args>` against this server, as a user runs it. */
  const corral = async (args: string[]) => {
    const run = await runCorral(args, { CORRAL_API_URL: server.apiUrl, CORRAL_API_KEY: KEY });
    expect(run.code, run.stderr).toBe(0);
    return run.stdout;
  };
  const workersOf = async (id: string) =>
    (await api(`endpoint?id=${id}`)).body.endpoint.workers as {
      id: string;
      state: { state: string; message: string };
    }[];

  beforeAll(async () => {
    image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-tiers-'));
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      'controller: { reconcileIntervalMs: 200 }\nquotas: { minGpus: unlimited, maxGpus: unlimited }\n',
    );
    server = await serve();
  }, 120_000);

  // One simulated GPU: the eviction case needs the two endpoints to want the same one.
  const serve = () =>
    startServe(['--runtime', 'docker', '--gpus', 'h100-80g:1', '--config', join(dataDir, 'corral.yaml')], {
      CORRAL_DATA_DIR: dataDir,
      CORRAL_API_KEY: KEY,
    });

  afterAll(async () => {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('an idle worker whose app takes 10 s to start is frozen (paused, no CPU use), and the next request is answered by a thaw, not a cold start', async () => {
    const id = await create('sleepy', { keepFrozen: 600 }, [{ key: 'STARTUP_DELAY_MS', value: '10000' }]);
    const first = await viaGateway(server, 'sleepy', '/work?ms=1');
    expect(first.status, first.body).toBe(200);
    // A cold start: its phases, the app's 10 s among them.
    expect(phase(first, 'placement')).toBeDefined();
    expect(phase(first, 'create')).toBeDefined();
    expect(phase(first, 'ready')).toBeGreaterThanOrEqual(9_000);
    const [container] = containersOf(id);
    expect(container).toBeDefined();

    await until(
      () => expect(docker(['inspect', '-f', '{{.State.Status}}', container ?? ''])).toBe('paused'),
      FROZEN_WITHIN_MS,
    );
    const [frozen] = await workersOf(id);
    expect(frozen?.state.state).toBe('frozen');
    expect(frozen?.state.message).toMatch(
      /^frozen since \S+Z \(idle\); stopped at \S+Z unless a request wakes it$/,
    );
    // Paused: no process of it runs.
    expect(docker(['stats', '--no-stream', '--format', '{{.CPUPerc}}', container ?? ''])).toBe('0.00%');
    // Listed as resting, not as broken: its HEALTHY is `-`, never `no`.
    expect(await corral(['workers', 'list', 'sleepy'])).toMatch(
      new RegExp(`^${frozen?.id}\\s+frozen\\s+-\\s+frozen since `, 'm'),
    );

    const woken = await viaGateway(server, 'sleepy', '/work?ms=1');
    expect(woken.status, woken.body).toBe(200);
    expect(woken.headers['x-corral-worker']).toBe(first.headers['x-corral-worker']);
    expect(String(woken.headers['server-timing'])).toMatch(/^queue;dur=[\d.]+, thaw;dur=[\d.]+$/);
    // Nothing of the 10 s start again (its measured time is in the report, not asserted).
    expect(woken.ms).toBeLessThan(5_000);
    expect(containersOf(id)).toEqual([container]);
    expect(docker(['inspect', '-f', '{{.State.Status}}', container ?? ''])).toBe('running');

    // The thaw counted apart from the cold start: its milliseconds do not lower the cold start's mean.
    const metrics = (await api(`endpoint/metrics?id=${id}`)).body;
    expect(metrics.coldStarts.count).toBe(1);
    expect(metrics.coldStarts.meanMs).toBeGreaterThanOrEqual(9_000);
    expect(metrics.thaws.count).toBe(1);
    expect(metrics.thaws.meanMs).toBeLessThan(5_000);
    expect(metrics.restores).toEqual({ count: 0, meanMs: null });
    const printed = await corral(['endpoints', 'metrics', 'sleepy']);
    expect(printed).toMatch(/^Cold starts: +1 \(mean \d{4,}(\.\d)? ms\)$/m);
    expect(printed).toMatch(/^Thaws: +1 \(mean [\d.]+ ms\)$/m);
    const scrape = await fetch(`${server.apiUrl}/metrics`, { headers: { authorization: `Bearer ${KEY}` } });
    expect(await scrape.text()).toMatch(
      new RegExp(`^corral_gateway_wake_seconds_count\\{endpoint="${id}",tier="thaw"\\} 1$`, 'm'),
    );
    console.log(
      `[idle-tiers e2e] cold start ${first.ms} ms (${first.headers['server-timing']}); after a thaw ${woken.ms} ms (${woken.headers['server-timing']}); endpoint/metrics coldStarts ${JSON.stringify(metrics.coldStarts)}, thaws ${JSON.stringify(metrics.thaws)}`,
    );
    await api('endpoint/delete', { id });
    await until(() => expect(containersOf(id)).toEqual([]), 30_000);
  }, 90_000);

  it('GPU pressure: a frozen worker of A is stopped for B (simulated GPUs cannot be checkpointed), B is served, and A next pays a cold start', async () => {
    const a = await create('tier-a', { keepFrozen: 600 });
    const b = await create('tier-b', { keepFrozen: 0 });
    expect((await viaGateway(server, 'tier-a', '/work?ms=1')).status).toBe(200);
    const [aContainer] = containersOf(a);
    await until(
      () => expect(docker(['inspect', '-f', '{{.State.Status}}', aContainer ?? ''])).toBe('paused'),
      FROZEN_WITHIN_MS,
    );

    const served = await viaGateway(server, 'tier-b', '/work?ms=1');
    expect(served.status, served.body).toBe(200);
    expect(phase(served, 'placement')).toBeDefined();
    expect(containersOf(a)).toEqual([]);
    expect(containersOf(b)).toHaveLength(1);
    const ended = (await api(`endpoint/worker/ended?id=${a}`)).body.workers as { reason: string }[];
    expect(ended.map((w) => w.reason)).toContain('stopped to free its GPUs for a worker of endpoint tier-b');
    expect(await corral(['workers', 'ended', 'tier-a'])).toMatch(
      /^\S+ +ended \S+ \S+ UTC, removed: stopped to free its GPUs for a worker of endpoint tier-b$/m,
    );
    // Both endpoints' events say it.
    const eventsOf = async (id: string) =>
      ((await api(`endpoint/log?id=${id}`)).body.events as { type: string; message: string }[])
        .filter((e) => e.type === 'eviction')
        .map((e) => e.message);
    expect(await eventsOf(a)).toEqual([
      expect.stringMatching(/^frozen worker \S+ stopped to free its GPUs for a worker of endpoint tier-b$/),
    ]);
    expect(await eventsOf(b)).toEqual([
      expect.stringMatching(
        /^frozen worker \S+ of endpoint tier-a stopped to free its GPUs for this endpoint's waiting worker$/,
      ),
    ]);

    // B's worker runs (never moved down for another); A waits for the GPU, then starts cold, and says so.
    const again = await viaGateway(server, 'tier-a', '/work?ms=1');
    expect(again.status, again.body).toBe(200);
    expect(phase(again, 'thaw')).toBeUndefined();
    expect(phase(again, 'placement')).toBeDefined();
    expect(phase(again, 'ready')).toBeDefined();
    expect((await api(`endpoint/metrics?id=${a}`)).body.coldStarts.count).toBe(2);
    for (const id of [a, b]) await api('endpoint/delete', { id });
    await until(() => expect([...containersOf(a), ...containersOf(b)]).toEqual([]), 30_000);
  }, 90_000);

  it('kill -9 of corral serve with a frozen worker: the restarted process adopts it frozen (one container, still paused), and a request thaws it', async () => {
    const id = await create('tier-restart', { keepFrozen: 600 });
    const first = await viaGateway(server, 'tier-restart', '/work?ms=1');
    expect(first.status, first.body).toBe(200);
    const [container] = containersOf(id);
    await until(
      () => expect(docker(['inspect', '-f', '{{.State.Status}}', container ?? ''])).toBe('paused'),
      FROZEN_WITHIN_MS,
    );
    server.child.kill('SIGKILL');
    await new Promise((resolve) => server.child.once('exit', resolve));
    server = await serve();
    await until(async () => {
      const [adopted] = await workersOf(id);
      expect(adopted).toMatchObject({ state: { state: 'frozen' } });
      expect(adopted?.state.message).toMatch(/^frozen since \S+Z \(adopted after a restart\)$/);
    }, 30_000);
    expect(containersOf(id)).toEqual([container]);
    expect(docker(['inspect', '-f', '{{.State.Status}}', container ?? ''])).toBe('paused');

    const woken = await viaGateway(server, 'tier-restart', '/work?ms=1');
    expect(woken.status, woken.body).toBe(200);
    expect(woken.headers['x-corral-worker']).toBe(first.headers['x-corral-worker']);
    expect(phase(woken, 'thaw')).toBeDefined();
    expect(containersOf(id)).toEqual([container]);
  }, 90_000);
});
