/**
 * An engine outage as the controller lives it, over the fake runtime made unreachable: the states say so within a
 * pass, workers that answer keep being routable, endpoints that need a new worker are refused, the log says it once
 * per change, and everything recovers by itself (a worker the engine killed meanwhile replaced, none duplicated).
 */
import { afterEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import { LABELS } from '../runtime/types.js';
import { RuntimeOutage } from './runtime-outage.js';

describe('the controller while the container engine cannot be reached', () => {
  let h: ControllerHarness;
  afterEach(() => h.close());

  it('says so within a pass, keeps serving workers routable, refuses new work, logs once per change and recovers', async () => {
    h = await controllerHarness();
    const serving = await h.create();
    const idle = await h.create({ workers: { minWorkers: 0, maxWorkers: 2, gpusPerWorker: 1 } });
    const lost = await h.create();
    h.controller.start();
    await h.eventually(async () => {
      expect(h.routes.routableWorkers(serving.id)).toHaveLength(1);
      expect(h.routes.routableWorkers(lost.id)).toHaveLength(1);
    });
    const [kept] = h.routes.routableWorkers(serving.id);
    const [killed] = h.routes.routableWorkers(lost.id);
    const createsBefore = h.runtime.counters.creates;

    h.runtime.unreachable('connect ECONNREFUSED /var/run/docker.sock');
    const downAt = h.timers.now;
    await h.timers.advanceSettling(20); // one interval: one pass
    await h.flush();
    const statusOf = async (id: string) => (await h.store.endpoints.get('owner-a', id))?.status;
    expect(h.timers.now - downAt).toBeLessThanOrEqual(25);
    expect(await statusOf(serving.id)).toMatchObject({
      state: 'serving',
      message: expect.stringMatching(/container engine unreachable since \d\d:\d\d:\d\d UTC: .*ECONNREFUSED/),
    });
    expect(await statusOf(idle.id)).toMatchObject({ state: 'failed', error: 'RUNTIME_UNAVAILABLE' });
    const [worker] = await h.store.workers.listByEndpoint(serving.id);
    expect(worker?.status).toMatchObject({
      state: 'running',
      message: expect.stringContaining('unreachable'),
    });
    // Workers that still answer stay routable; an endpoint without one is refused at once.
    expect(h.routes.routableWorkers(serving.id).map((w) => w.id)).toEqual([kept?.id]);
    // (The refusal says why no new worker can come; the gateway applies it only while none is routable.)
    expect(h.routes.conditionOf(serving.id)?.refusal?.kind).toBe('runtime-unavailable');
    expect(h.routes.conditionOf(idle.id)?.refusal).toMatchObject({
      kind: 'runtime-unavailable',
      reason: 'RUNTIME_UNAVAILABLE',
      message: expect.stringContaining('ECONNREFUSED'),
    });

    // The engine kills a worker meanwhile: it stops answering and leaves routing; nothing can replace it yet.
    h.runtime.exit(killed?.id ?? '', 137);
    h.unhealthyPorts.add(killed?.address.port ?? 0);
    // healthy.failureThreshold (3) probes, healthy.period (2 s) apart: 8 s of passes and probes.
    for (let i = 0; i < 100; i++) await h.timers.advanceSettling(80);
    await h.flush();
    expect(h.routes.routableWorkers(lost.id)).toEqual([]);
    expect(h.routes.conditionOf(lost.id)?.refusal?.kind).toBe('runtime-unavailable');
    expect(h.runtime.counters.creates).toBe(createsBefore);
    const loud = () => h.logs.filter((l) => l.level !== 'info' || l.message.includes('engine'));
    expect(loud().map((l) => [l.level, l.message])).toEqual([
      [
        'warn',
        'container engine unreachable; workers that still answer keep serving, no new worker can start',
      ],
    ]);

    h.runtime.reachable();
    await h.eventually(async () => {
      expect(h.routes.routableWorkers(lost.id)).toHaveLength(1);
      expect(await statusOf(serving.id)).toMatchObject({ state: 'serving', error: '' });
      expect(await statusOf(idle.id)).toMatchObject({ state: 'serving', error: '' });
    });
    // The killed worker was replaced; the one that kept serving was kept; none is duplicated.
    expect(h.routes.routableWorkers(serving.id).map((w) => w.id)).toEqual([kept?.id]);
    expect(h.routes.routableWorkers(lost.id).map((w) => w.id)).not.toContain(killed?.id);
    for (const endpoint of [serving, lost]) {
      const live = await h.runtime.list({ [LABELS.endpoint]: endpoint.id });
      expect(live.filter((w) => w.phase !== 'exited')).toHaveLength(1);
    }
    expect(h.runtime.counters.creates).toBe(createsBefore + 1);
    const [again] = await h.store.workers.listByEndpoint(serving.id);
    expect(again?.status).toMatchObject({ state: 'running', message: '' });
    expect(h.routes.conditionOf(idle.id)?.refusal).toBeUndefined();
    // The recovery is said once, and the worker the engine killed meanwhile once, as the listing shows its exit.
    expect(loud().map((l) => l.level)).toEqual(['warn', 'info', 'warn']);
    expect(loud()[1]?.message).toBe('container engine reachable again');
    expect(loud()[2]?.message).toBe(
      `endpoint ${lost.id}: worker ${killed?.id} killed (signal 9, exit code 137)`,
    );
  });

  it('a create the engine cannot take counts toward no crash loop', async () => {
    h = await controllerHarness({ backoff: { baseMs: 10, capMs: 50, crashLoopAfter: 2 } });
    const endpoint = await h.create();
    // Every list succeeds but every create fails as an unreachable engine does.
    const create = h.runtime.create.bind(h.runtime);
    let refused = 0;
    h.runtime.create = async (spec, onProgress) => {
      if (refused < 4) {
        refused += 1;
        h.runtime.unreachable();
        try {
          return await create(spec, onProgress);
        } finally {
          h.runtime.reachable();
        }
      }
      return create(spec, onProgress);
    };
    h.controller.start();
    await h.eventually(() => expect(h.routes.routableWorkers(endpoint.id)).toHaveLength(1));
    expect(refused).toBe(4);
    const events = await h.store.events.list(endpoint.id, { afterId: 0, limit: 100 });
    expect(JSON.stringify(events)).not.toContain('CRASH_LOOP');
  });
});

describe('RuntimeOutage', () => {
  it('notes itself on active workers once and gives them their own message back', () => {
    const lines: string[] = [];
    const logger = {
      info: (_: object, m: string) => lines.push(m),
      warn: (_: object, m: string) => lines.push(m),
    };
    const outage = new RuntimeOutage({ logger: { ...logger, error: logger.warn } });
    const worker = {
      id: 'w1',
      state: 'pending',
      message: 'needs 1 GPU of h100-80g, 0 free',
    } as Parameters<RuntimeOutage['note']>[0] extends Iterable<infer W> ? W : never;
    const failed = { ...worker, id: 'w2', state: 'failed', message: 'exited with code 3' } as typeof worker;
    outage.failed(new Error('connect ECONNREFUSED'), Date.UTC(2026, 0, 1, 12, 1, 3));
    outage.failed(new Error('connect ECONNREFUSED'), Date.UTC(2026, 0, 1, 12, 1, 4));
    expect(outage.text).toBe('container engine unreachable since 12:01:03 UTC: connect ECONNREFUSED');
    expect(outage.note([worker, failed]).map((w) => w.id)).toEqual(['w1']);
    expect(outage.note([worker, failed])).toEqual([]);
    expect(worker.message).toBe(outage.text);
    expect(outage.reachable(Date.UTC(2026, 0, 1, 12, 1, 30), () => worker)).toEqual([worker]);
    expect(worker.message).toBe('needs 1 GPU of h100-80g, 0 free');
    expect(failed.message).toBe('exited with code 3');
    expect(outage.text).toBeUndefined();
    expect(lines).toEqual([
      'container engine unreachable; workers that still answer keep serving, no new worker can start',
      'container engine reachable again',
    ]);
  });
});
