import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../../test/support/simulated-controller.js';
import type { Endpoint } from '../../domain/endpoint.js';
import type { ScalingAdvisor } from '../controller-options.js';
import type { HealthProbe } from './health-prober.js';
import { answered, type ProbeResult } from './probe-result.js';

const REFUSED: ProbeResult = { kind: 'error', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' };

/** A scaling advisor whose answer the test sets: how many workers the endpoint's requests want. */
function fixedScaling(): ScalingAdvisor & { desired: number } {
  const advisor = {
    desired: 0,
    advise: () => ({ desired: advisor.desired, victims: [] }),
    retain: () => undefined,
    onRescale: () => () => undefined,
  };
  return advisor;
}

describe('Controller: health failures name their cause', () => {
  let h: ControllerHarness;
  /** What every probe finds now. */
  let found: ProbeResult;
  let probes: number;
  const probe: HealthProbe = async () => {
    probes += 1;
    return found;
  };
  beforeEach(async () => {
    h = await controllerHarness();
    found = REFUSED;
    probes = 0;
  });
  afterEach(() => h.close());

  const workerRows = (endpoint: Endpoint) => h.store.workers.listByEndpoint(endpoint.id);
  const events = (endpoint: Endpoint) => h.store.events.list(endpoint.id, { afterId: 0, limit: 1000 });
  const status = async (endpoint: Endpoint) =>
    (await h.store.endpoints.get(endpoint.ownerId, endpoint.id))?.status;
  /** Simulated ms from now until `check` holds. */
  const within = async (check: () => Promise<void>, limitMs: number) => {
    const from = h.timers.now;
    await h.eventually(check, limitMs);
    return h.timers.now - from;
  };

  it("the starting worker's message names each cause within one probe period, and the log once per cause", async () => {
    const endpoint = await h.create({ patch: { port: 8000, health: { path: '/health', periodSeconds: 2 } } });
    // serve's timings: a pass every second (pokes aside), a starting worker probed every 50 ms.
    h.controller({ probe, intervalMs: 1000, startingProbeIntervalMs: 50, startupTimeoutMs: 30_000 }).start();
    await h.eventually(async () => expect((await workerRows(endpoint))[0]?.status.state).toBe('starting'));

    const refusedAfter = await within(async () => {
      expect((await workerRows(endpoint))[0]?.status.message).toBe(
        'waiting for /health to pass; last probe: connection refused on port 8000',
      );
    }, 2000);
    found = answered(404);
    const notFoundAfter = await within(async () => {
      expect((await workerRows(endpoint))[0]?.status.message).toBe(
        'waiting for /health to pass; last probe: HTTP 404 from /health',
      );
    }, 2000);
    expect(Math.max(refusedAfter, notFoundAfter)).toBeLessThanOrEqual(2000);

    // Within its first probe period a starting worker's failures are its app coming up: no event yet.
    expect((await events(endpoint)).filter((e) => e.type === 'health')).toEqual([]);
    // Then many probes, one event per cause.
    found = REFUSED;
    await h.advance(2000, 50);
    found = answered(404);
    await h.advance(1000, 50);
    found = REFUSED;
    await h.advance(1000, 50);
    expect(probes).toBeGreaterThan(60);
    const [worker] = await workerRows(endpoint);
    const health = (await events(endpoint)).filter((e) => e.type === 'health');
    expect(health.map((e) => e.message)).toEqual([
      `worker ${worker?.id}: connection refused on port 8000`,
      `worker ${worker?.id}: HTTP 404 from /health`,
    ]);
    expect(health[1]?.data).toEqual({
      workerId: worker?.id,
      path: '/health',
      cause: 'HTTP 404 from /health',
    });
  });

  it('an ordinary start (refused until the app listens, within a probe period) writes no health event', async () => {
    const endpoint = await h.create();
    h.controller({ probe, intervalMs: 1000, startingProbeIntervalMs: 50 }).start();
    await h.eventually(async () => expect((await workerRows(endpoint))[0]?.status.state).toBe('starting'));
    await h.advance(1500, 50);
    found = answered(200);
    await h.eventually(async () => expect((await workerRows(endpoint))[0]?.status.state).toBe('running'));
    await h.advance(3000, 50);
    expect((await events(endpoint)).filter((e) => e.type === 'health')).toEqual([]);
  });

  it('a worker that never passes fails HEALTH_TIMEOUT naming the last cause, with a failed event', async () => {
    found = answered(404);
    const endpoint = await h.create({ patch: { health: { path: '/ready' } } });
    h.controller({ probe, startupTimeoutMs: 5_000 }).start();
    await h.eventually(async () => {
      const failed = (await workerRows(endpoint)).find((w) => w.status.state === 'failed');
      expect(failed?.status).toEqual({
        state: 'failed',
        error: 'HEALTH_TIMEOUT',
        message:
          'never passed its health check /ready within 5 s of starting; last probe: HTTP 404 from /ready',
      });
    }, 10_000);
    const failed = (await events(endpoint)).filter((e) => e.type === 'failed');
    expect(failed[0]?.message).toMatch(
      /^worker \S+ failed \(HEALTH_TIMEOUT\): never passed its health check \/ready within 5 s of starting; last probe: HTTP 404 from \/ready$/,
    );
    expect(failed[0]?.data).toMatchObject({ error: 'HEALTH_TIMEOUT' });
    // One timeout is retried, not the endpoint's failure.
    expect((await status(endpoint))?.state).toBe('deploying');
  });

  it('a named path that answers 404 on every probe fails the worker in about 10 s, and the endpoint with it', async () => {
    found = answered(404);
    const endpoint = await h.create({ patch: { port: 8000, health: { path: '/ready' } } });
    // serve's defaults: the 300 s startup deadline is not what ends this.
    h.controller({ probe, intervalMs: 1000, startingProbeIntervalMs: 50, startupTimeoutMs: 300_000 }).start();
    const tookMs = await within(async () => expect((await status(endpoint))?.state).toBe('failed'), 30_000);
    expect(tookMs).toBeGreaterThanOrEqual(10_000);
    expect(tookMs).toBeLessThanOrEqual(12_000);
    const cause =
      'GET /ready answered 404 on every probe for 10 s: set healthy.path to a path your app serves';
    expect(await status(endpoint)).toEqual({ state: 'failed', error: 'HEALTH_TIMEOUT', message: cause });
    const [worker] = await workerRows(endpoint);
    expect(worker?.status).toEqual({ state: 'failed', error: 'HEALTH_TIMEOUT', message: cause });
  });

  it('minNum 0: the woken worker fails HEALTH_TIMEOUT though its request went away; two fail the endpoint, no flapping', async () => {
    found = answered(404);
    const scaling = fixedScaling();
    const endpoint = await h.create({
      // Named: the default path would ask / after the 404, and pass.
      patch: { workers: { minWorkers: 0, maxWorkers: 1, gpusPerWorker: 1 }, health: { path: '/health' } },
    });
    h.controller({ probe, scaling, startupTimeoutMs: 5_000 }).start();
    await h.eventually(async () => expect((await status(endpoint))?.state).toBe('serving'));

    // A request wakes a worker, then goes away (it timed out) while the worker is still starting.
    scaling.desired = 1;
    await h.eventually(async () => expect((await workerRows(endpoint))[0]?.status.state).toBe('starting'));
    scaling.desired = 0;
    await h.eventually(async () => {
      const [worker] = await workerRows(endpoint);
      expect(worker?.status).toMatchObject({ state: 'failed', error: 'HEALTH_TIMEOUT' });
    }, 10_000);
    await h.advance(2000, 50);
    expect(await status(endpoint)).toMatchObject({
      state: 'deploying',
      message: expect.stringMatching(/^a worker failed \(1 failed in a row, last: never passed .*HTTP 404/),
    });

    // The next request's worker fails the same way: the endpoint is failed, and says why.
    scaling.desired = 1;
    await h.eventually(async () => expect((await status(endpoint))?.state).toBe('failed'), 20_000);
    expect(await status(endpoint)).toMatchObject({
      error: 'HEALTH_TIMEOUT',
      message: expect.stringMatching(
        /^2 workers in a row never passed their health check; last: never passed its health check \/health within 5 s of starting; last probe: HTTP 404 from \/health/,
      ),
    });
    const states = (await events(endpoint)).filter((e) => e.type === 'state').map((e) => e.data.state);
    expect(states).toEqual(['serving', 'deploying', 'failed']);
    expect((await events(endpoint)).filter((e) => e.type === 'failed')).toHaveLength(2);
  });
});
