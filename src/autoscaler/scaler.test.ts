import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { ManualTimers } from '../../test/support/manual-timers.js';
import type { EndpointQueueSignal, QueueSignals } from '../ports/queue-signals.js';
import { type ScalableWorker, Scaler } from './scaler.js';

/** Queue signals set by hand, as a gateway would report them. */
class HandSignals implements QueueSignals {
  readonly queues = new Map<string, { length: number; oldestEnqueuedAt: number | null }>();
  readonly load = new Map<string, { inFlight: number; lastBusyAt?: number; awaited?: 'strict' | 'resume' }>();
  readonly asked: string[][] = [];
  readonly #listeners = new Set<(endpointId: string) => void>();

  queueSignal(endpointId: string, exists: (workerId: string) => boolean): EndpointQueueSignal | undefined {
    const queue = this.queues.get(endpointId);
    if (!queue) return undefined;
    this.asked.push([...this.load.keys()].filter(exists));
    return {
      queueLength: queue.length,
      oldestEnqueuedAt: queue.oldestEnqueuedAt,
      inFlight: (id) => this.load.get(id)?.inFlight ?? 0,
      lastBusyAt: (id) => this.load.get(id)?.lastBusyAt,
      awaited: (id) => this.load.get(id)?.awaited,
    };
  }

  onQueued(listener: (endpointId: string) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  queued(endpointId: string): void {
    for (const listener of this.#listeners) listener(endpointId);
  }
}

function harness() {
  const timers = new ManualTimers(100_000);
  const signals = new HandSignals();
  const decisions: { endpointId: string; desired: number; at: number }[] = [];
  const scaler = new Scaler({
    signals,
    clock: () => timers.now,
    timers,
    metrics: {
      observeScaleDecision: (endpointId, decision, now) =>
        decisions.push({ endpointId, desired: decision.desired, at: now }),
      retain: () => {},
    },
  });
  let rescales = 0;
  scaler.onRescale(() => {
    rescales += 1;
  });
  return { timers, signals, scaler, decisions, rescales: () => rescales };
}

const endpoint = (patch: Parameters<typeof sampleEndpoint>[0] = {}) =>
  sampleEndpoint({
    patch: {
      workers: { minWorkers: 0, maxWorkers: 4, maxConcurrent: 2, idleTimeoutSeconds: 10 },
      scaling: { type: 'queue', value: 1 },
      ...patch.patch,
    },
  });

const running = (id: string, revision: number, readyAt = 0, createdAt = 0): ScalableWorker => ({
  id,
  revision,
  state: 'running',
  createdAt,
  readyAt,
});

describe('Scaler', () => {
  it('names the workers strict requests wait for busy, and those strict-resume ones wait for to wake', () => {
    const h = harness();
    const e = endpoint();
    h.signals.queues.set(e.id, { length: 0, oldestEnqueuedAt: null });
    h.signals.load.set('w-1', { inFlight: 2, awaited: 'strict' });
    h.signals.load.set('w-2', { inFlight: 0, lastBusyAt: 0, awaited: 'resume' });
    h.signals.load.set('w-3', { inFlight: 0, lastBusyAt: 0 });
    const frozen = { ...running('w-2', e.revision), state: 'frozen' as const };
    const advice = h.scaler.advise(e, [running('w-1', e.revision), frozen, running('w-3', e.revision)]);
    expect(advice.busy.sort()).toEqual(['w-1', 'w-2']);
    expect(advice.wake).toEqual(['w-2']);
    expect(advice.victims).toEqual(['w-3']);
  });

  it('wakes a frozen or suspended worker a request is in flight on (one that reached it before its freeze)', () => {
    // Another replica's gateway sent it a request just before the leader froze it: the count the drain had read was
    // 0, and the request waits inside the paused process until a thaw.
    const h = harness();
    const e = endpoint();
    h.signals.queues.set(e.id, { length: 0, oldestEnqueuedAt: null });
    h.signals.load.set('w-frozen', { inFlight: 1, lastBusyAt: 0 });
    h.signals.load.set('w-suspended', { inFlight: 2, lastBusyAt: 0 });
    h.signals.load.set('w-idle', { inFlight: 0, lastBusyAt: 0 });
    const frozen = { ...running('w-frozen', e.revision), state: 'frozen' as const };
    const suspended = { ...running('w-suspended', e.revision), state: 'suspended' as const };
    const idle = { ...running('w-idle', e.revision), state: 'frozen' as const };
    const advice = h.scaler.advise(e, [frozen, suspended, idle]);
    expect(advice.wake.sort()).toEqual(['w-frozen', 'w-suspended']);
    expect(advice.busy.sort()).toEqual(['w-frozen', 'w-suspended']);
  });

  it('asks for minNum and names no victim for an endpoint no request has reached', () => {
    const h = harness();
    const e = sampleEndpoint({ patch: { workers: { minWorkers: 2, maxWorkers: 4 } } });
    expect(h.scaler.advise(e, []).desired).toBe(2);
    expect(h.scaler.advise(e, []).victims).toEqual([]);
    expect(h.timers.count).toBe(0);
  });

  it('asks the controller for a pass the moment a request queues (a wake from zero)', () => {
    const h = harness();
    const e = endpoint();
    h.signals.queued(e.id);
    expect(h.rescales()).toBe(1);
    h.signals.queues.set(e.id, { length: 1, oldestEnqueuedAt: h.timers.now });
    expect(h.scaler.advise(e, []).desired).toBe(1);
    expect(h.decisions.at(-1)).toMatchObject({ endpointId: e.id, desired: 1 });
  });

  it("arms one timer for the queue policy's threshold and asks for a pass when it is reached", () => {
    const h = harness();
    const e = endpoint();
    const workers = [running('w1', e.revision)];
    h.signals.load.set('w1', { inFlight: 2, lastBusyAt: h.timers.now });
    h.signals.queues.set(e.id, { length: 3, oldestEnqueuedAt: h.timers.now });
    expect(h.scaler.advise(e, workers).desired).toBe(1);
    expect(h.scaler.advise(e, workers).desired).toBe(1);
    expect(h.timers.count).toBe(1);
    h.timers.advance(999);
    expect(h.rescales()).toBe(0);
    h.timers.advance(1);
    expect(h.rescales()).toBe(1);
    // Past the threshold: enough workers for the queue, ceil(3 / 2) more.
    expect(h.scaler.advise(e, workers).desired).toBe(3);
  });

  it('scales down an idle worker once idle for the timeout, newest first, and only workers of the current revision', () => {
    const h = harness();
    const e = endpoint();
    const workers = [
      running('w-old', e.revision - 1),
      running('w1', e.revision, 1_000, 10),
      running('w2', e.revision, 2_000, 50),
    ];
    h.signals.queues.set(e.id, { length: 0, oldestEnqueuedAt: null });
    h.signals.load.set('w1', { inFlight: 0, lastBusyAt: h.timers.now });
    h.signals.load.set('w2', { inFlight: 0, lastBusyAt: h.timers.now });
    expect(h.scaler.advise(e, workers).desired).toBe(2);
    h.timers.advance(10_000);
    expect(h.rescales()).toBe(1);
    expect(h.scaler.advise(e, workers).desired).toBe(0);
    expect(h.scaler.advise(e, workers).victims).toEqual(['w2', 'w1']);
  });

  it("counts a worker the gateway never saw busy as idle since it was ready, and passes the controller's workers for pruning", () => {
    const h = harness();
    const e = endpoint();
    const workers = [running('w1', e.revision, 80_000)];
    h.signals.queues.set(e.id, { length: 0, oldestEnqueuedAt: null });
    h.signals.load.set('gone', { inFlight: 0, lastBusyAt: 1 });
    expect(h.scaler.advise(e, workers).victims).toEqual(['w1']);
    expect(h.signals.asked.at(-1)).toEqual([]);
  });

  it('keeps a worker adopted after a restart, with no traffic since, until idle for freeTimeout from its adoption', () => {
    const h = harness();
    const e = endpoint({ patch: { workers: { minWorkers: 0, maxWorkers: 2, idleTimeoutSeconds: 20 } } });
    // Its container started long before this process; it has not passed a probe since the adoption.
    const adopted: ScalableWorker = {
      id: 'w-adopted',
      revision: e.revision,
      state: 'starting',
      createdAt: 1_000,
      readyAt: null,
      adoptedAt: h.timers.now,
    };
    expect(h.scaler.advise(e, [adopted])).toEqual({ desired: 1, victims: [], busy: [], wake: [] });
    h.timers.advance(19_999);
    expect(h.rescales()).toBe(0);
    expect(h.scaler.advise(e, [adopted])).toEqual({ desired: 1, victims: [], busy: [], wake: [] });
    h.timers.advance(1);
    expect(h.rescales()).toBe(1);
    expect(h.scaler.advise(e, [adopted])).toEqual({ desired: 0, victims: ['w-adopted'], busy: [], wake: [] });
  });

  it('remembers the desired count of its last advice, within the bounds, 0 while stopped, until the endpoint goes', () => {
    const h = harness();
    const e = endpoint({ patch: { workers: { minWorkers: 1, maxWorkers: 2, maxConcurrent: 1 } } });
    expect(h.scaler.desired(e.id)).toBeUndefined();
    h.scaler.advise(e, []);
    expect(h.scaler.desired(e.id)).toBe(1);
    // Five queued with one slot per worker: the decision asks for more than maxWorkers; the controller acts on 2.
    h.signals.queues.set(e.id, { length: 5, oldestEnqueuedAt: h.timers.now - 60_000 });
    h.scaler.advise(e, [running('w1', e.revision)]);
    expect(h.scaler.desired(e.id)).toBe(2);
    h.scaler.advise({ ...e, desired: 'stopped' }, []);
    expect(h.scaler.desired(e.id)).toBe(0);
    h.scaler.retain(() => false);
    expect(h.scaler.desired(e.id)).toBeUndefined();
  });

  it('drops the timers of endpoints that no longer exist, and all of them on close', () => {
    const h = harness();
    const [kept, gone] = [endpoint(), endpoint()];
    for (const e of [kept, gone]) {
      h.signals.queues.set(e.id, { length: 1, oldestEnqueuedAt: h.timers.now });
      h.scaler.advise(e, [running(`w-${e.id}`, e.revision)]);
    }
    expect(h.timers.count).toBe(2);
    h.scaler.retain((id) => id === kept.id);
    expect(h.timers.count).toBe(1);
    h.scaler.close();
    expect(h.timers.count).toBe(0);
    h.signals.queued(kept.id);
    expect(h.rescales()).toBe(0);
  });
});
