import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../../test/support/simulated-controller.js';
import type { Endpoint } from '../../domain/endpoint.js';

const MIB = 1024 * 1024;
/** 0.25 GiB per GPU: a one-GPU worker runs under a 256 MiB limit. */
const memoryGBPerGpu = 0.25;

describe('Controller: workers that run out of memory soon after turning healthy', () => {
  let h: ControllerHarness;
  beforeEach(async () => {
    h = await controllerHarness();
  });
  afterEach(() => h.close());

  const state = async (endpoint: Endpoint) =>
    (await h.store.endpoints.get(endpoint.ownerId, endpoint.id))?.status;
  const events = (endpoint: Endpoint) => h.store.events.list(endpoint.id, { afterId: 0, limit: 1000 });
  const running = async (endpoint: Endpoint) =>
    (await h.store.workers.listByEndpoint(endpoint.id)).find((w) => w.status.state === 'running');

  /**
   * Each worker runs healthy for 3 s, then the OOM killer ends it; returns how long after each death the next
   * worker started, until the endpoint is failed or `deaths` workers died.
   */
  async function oomLoop(endpoint: Endpoint, deaths: number): Promise<number[]> {
    const gaps: number[] = [];
    let diedAt: number | undefined;
    for (let i = 0; i < deaths; i++) {
      let worker: Awaited<ReturnType<typeof running>>;
      await h.eventually(async () => {
        worker = await running(endpoint);
        expect(worker).toBeDefined();
      }, 120_000);
      if (diedAt !== undefined) gaps.push((worker?.readyAt ?? 0) - diedAt);
      await h.advance(3_000, 20);
      h.runtime.outOfMemory(worker?.id ?? '');
      diedAt = h.timers.now;
      await h.flush();
    }
    return gaps;
  }

  it('reaches failed CRASH_LOOP with exponential backoff, saying out of memory, with one event per change', async () => {
    const endpoint = await h.create();
    h.controller({ memoryGBPerGpu }).start();

    const gaps = await oomLoop(endpoint, 5);

    await h.eventually(async () =>
      expect(await state(endpoint)).toMatchObject({ state: 'failed', error: 'CRASH_LOOP' }),
    );
    expect((await state(endpoint))?.message).toContain('out of memory: limit 256 MiB');
    // 1 s, 2 s, 4 s, 8 s between a death and the next worker (default backoff), not a restart at once.
    expect(gaps.map((gap) => Math.floor(gap / 1000))).toEqual([1, 2, 4, 8]);
    const failed = (await h.store.workers.listByEndpoint(endpoint.id)).filter(
      (w) => w.status.state === 'failed',
    );
    expect(failed.map((w) => w.status.message)).toContain(
      `worker ran out of memory: limit ${(256 * MIB) / MIB} MiB (exit code 137)`,
    );
    expect(failed.map((w) => w.status.error)).toContain('CRASH_LOOP');

    const log = await events(endpoint);
    // serving once, failed once: no serving/deploying flip at each restart.
    expect(log.filter((e) => e.type === 'state').map((e) => e.data.state)).toEqual(['serving', 'failed']);
    const crashes = log.filter((e) => e.type === 'crashed');
    expect(crashes).toHaveLength(5);
    expect(crashes[0]?.message).toMatch(/^worker \S+ ran out of memory: limit 256 MiB \(exit code 137\)$/);
    expect(crashes[0]?.data).toMatchObject({
      exitCode: 137,
      reason: 'out-of-memory',
      error: 'RUNTIME_ERROR',
    });
    expect(crashes[4]?.data).toMatchObject({ error: 'CRASH_LOOP' });
  });

  it('stays failed while a worker is healthy for less than the reset time; serving once it has run that long', async () => {
    const endpoint = await h.create();
    h.controller({ memoryGBPerGpu, crashResetMs: 60_000 }).start();
    await oomLoop(endpoint, 5);
    await h.eventually(async () => expect((await state(endpoint))?.error).toBe('CRASH_LOOP'));

    // The next worker (after the backoff) stays healthy: still failed 30 s on, serving after 60 s.
    await h.eventually(async () => expect(await running(endpoint)).toBeDefined(), 120_000);
    await h.advance(30_000, 100);
    expect((await state(endpoint))?.state).toBe('failed');
    await h.advance(31_000, 100);
    expect((await state(endpoint))?.state).toBe('serving');

    // A fresh run: the next death is one failure, not the sixth.
    h.runtime.outOfMemory((await running(endpoint))?.id ?? '');
    await h.flush();
    const log = await events(endpoint);
    expect(log.filter((e) => e.type === 'crashed').at(-1)?.data).toMatchObject({ error: 'RUNTIME_ERROR' });
    expect((await state(endpoint))?.state).toBe('serving');
  });

  it('a worker that never got healthy ends the run as soon as one does (a fixed image is served at once)', async () => {
    h.healthy = () => false;
    const endpoint = await h.create();
    h.controller({ startupTimeoutMs: 50, backoff: { baseMs: 10, capMs: 50, crashLoopAfter: 3 } }).start();
    await h.eventually(async () => expect((await state(endpoint))?.error).toBe('HEALTH_TIMEOUT'));
    h.healthy = () => true;
    await h.eventually(async () => expect((await state(endpoint))?.state).toBe('serving'));
  });

  it('a single death of a serving endpoint writes no state event: it is replaced, still serving', async () => {
    const endpoint = await h.create();
    h.controller({ memoryGBPerGpu }).start();
    await oomLoop(endpoint, 1);
    await h.eventually(async () => expect(await running(endpoint)).toBeDefined(), 10_000);
    expect((await state(endpoint))?.state).toBe('serving');
    const log = await events(endpoint);
    expect(log.filter((e) => e.type === 'state').map((e) => e.data.state)).toEqual(['serving']);
  });
});
