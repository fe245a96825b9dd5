import { describe, expect, it } from 'vitest';
import { ManualTimers, settle } from '../../../test/support/manual-timers.js';
import { DEFAULT_RETRY, retryDelayMs, WorkQueue, type WorkQueueOptions } from './work-queue.js';

const FULL = '*';

/** A queue whose processing of each key ends when the test says (`finish`), or fails when told beforehand. */
function harness(options: Partial<WorkQueueOptions<string>> = {}) {
  const timers = new ManualTimers();
  const started: string[] = [];
  const finishers = new Map<string, () => void>();
  const failing = new Set<string>();
  const errors: { key: string; repeated: boolean; retryInMs: number }[] = [];
  const queue = new WorkQueue<string>({
    timers,
    concurrency: 2,
    retry: { baseMs: 100, capMs: 1_000 },
    supersedes: (key) => key === FULL,
    process: (key) => {
      started.push(key);
      if (failing.has(key)) return Promise.reject(new Error(`${key} failed`));
      return new Promise<void>((resolve) => finishers.set(key, resolve));
    },
    onError: (key, _error, { repeated, retryInMs }) => errors.push({ key, repeated, retryInMs }),
    ...options,
  });
  const finish = async (...keys: string[]) => {
    for (const key of keys) {
      finishers.get(key)?.();
      finishers.delete(key);
    }
    await settle();
  };
  /** Fires what is due after `ms` and lets the processing it began run. */
  const advance = async (ms = 0) => {
    await timers.advanceSettling(ms);
  };
  return { timers, queue, started, failing, errors, finish, advance, running: () => [...finishers.keys()] };
}

describe('retryDelayMs', () => {
  it.each([
    [1, 100],
    [2, 200],
    [3, 400],
    [4, 800],
    [5, 1_000],
    [30, 1_000],
  ])('after %i failures in a row: %i ms', (failures, ms) => {
    expect(retryDelayMs({ baseMs: 100, capMs: 1_000 }, failures)).toBe(ms);
  });

  it('never waits past the default cap', () => {
    expect(retryDelayMs(DEFAULT_RETRY, 1_000)).toBe(DEFAULT_RETRY.capMs);
  });
});

describe('WorkQueue', () => {
  it('coalesces a key added again while it waits, and begins on the next turn', async () => {
    const h = harness();
    h.queue.add('a');
    h.queue.add('a');
    h.queue.add('b');
    expect(h.started).toEqual([]);
    await h.advance();
    expect(h.started).toEqual(['a', 'b']);
    await h.finish('a', 'b');
    await h.advance();
    expect(h.started).toEqual(['a', 'b']);
    expect(h.queue.idle).toBe(true);
  });

  it('processes a key added during its processing once more afterwards, however often it was added', async () => {
    const h = harness();
    h.queue.add('a');
    await h.advance();
    h.queue.add('a');
    h.queue.add('a');
    await h.advance();
    expect(h.started).toEqual(['a']);
    await h.finish('a');
    await h.advance();
    expect(h.started).toEqual(['a', 'a']);
    await h.finish('a');
    await h.advance();
    expect(h.started).toEqual(['a', 'a']);
    expect(h.queue.idle).toBe(true);
  });

  it('processes at most `concurrency` keys at once, in the order they were added', async () => {
    const h = harness();
    for (const key of ['a', 'b', 'c', 'd']) h.queue.add(key);
    await h.advance();
    expect(h.running()).toEqual(['a', 'b']);
    await h.finish('b');
    await h.advance();
    expect(h.running()).toEqual(['a', 'c']);
    await h.finish('a', 'c');
    await h.advance();
    expect(h.running()).toEqual(['d']);
    expect(h.started).toEqual(['a', 'b', 'c', 'd']);
  });

  it('processes a superseding key before those waiting, alone, dropping those it does the work of', async () => {
    const h = harness();
    h.queue.add('a');
    await h.advance();
    h.queue.add('b');
    h.queue.add('c');
    h.queue.add(FULL);
    await h.advance();
    // 'a' runs: the whole waits for it, and nothing starts meanwhile.
    expect(h.running()).toEqual(['a']);
    await h.finish('a');
    await h.advance();
    expect(h.running()).toEqual([FULL]);
    h.queue.add('d');
    await h.advance();
    expect(h.running()).toEqual([FULL]);
    await h.finish(FULL);
    await h.advance();
    // 'b' and 'c' waited when it began: done by it. 'd' came during it.
    expect(h.running()).toEqual(['d']);
    expect(h.started).toEqual(['a', FULL, 'd']);
  });

  it.each([
    // failures in a row -> the retry delays (base 100, cap 1,000)
    [1, [100]],
    [3, [100, 200, 400]],
    [6, [100, 200, 400, 800, 1_000, 1_000]],
  ])('retries a key that fails %i times with its own exponential backoff: %j ms', async (times, delays) => {
    const h = harness();
    h.failing.add('a');
    h.queue.add('a');
    await h.advance();
    for (let i = 1; i < times; i++) {
      const delay = delays[i - 1] ?? 0;
      await h.advance(delay - 1);
      expect(h.started.length).toBe(i);
      await h.advance(1);
      expect(h.started.length).toBe(i + 1);
    }
    expect(h.errors.map((e) => e.retryInMs)).toEqual(delays);
    expect(h.errors.map((e) => e.repeated)).toEqual(delays.map((_, i) => i > 0));
  });

  it('forgets the backoff once the key succeeds, and keeps other keys on their own', async () => {
    const h = harness();
    h.failing.add('a');
    h.failing.add('b');
    h.queue.add('a');
    await h.advance();
    await h.advance(100);
    await h.advance(200);
    expect(h.errors.filter((e) => e.key === 'a').map((e) => e.retryInMs)).toEqual([100, 200, 400]);
    h.queue.add('b');
    await h.advance();
    expect(h.errors.filter((e) => e.key === 'b').map((e) => e.retryInMs)).toEqual([100]);
    h.failing.delete('a');
    await h.advance(400);
    await h.finish('a');
    h.failing.add('a');
    h.queue.add('a');
    await h.advance();
    expect(h.errors.filter((e) => e.key === 'a').map((e) => e.retryInMs)).toEqual([100, 200, 400, 100]);
    expect(h.errors.at(-1)?.repeated).toBe(false);
  });

  it('adds a key after a delay, once for every add within it; none after stop', async () => {
    const h = harness();
    h.queue.addAfter('a', 20);
    await h.advance(10);
    h.queue.addAfter('a', 20);
    h.queue.addAfter('b', 0);
    await h.advance(9);
    expect(h.started).toEqual(['b']);
    await h.advance(1);
    expect(h.started).toEqual(['b', 'a']);
    await h.finish('a', 'b');
    await h.advance(100);
    expect(h.started).toEqual(['b', 'a']);
    h.queue.addAfter('c', 20);
    await h.queue.stop();
    await h.advance(100);
    expect(h.started).toEqual(['b', 'a']);
    expect(h.timers.count).toBe(0);
  });

  it('says a failure is repeated when the last failure of any key had its message, until a key succeeds', async () => {
    const h = harness({
      process: (key) =>
        key.startsWith('down') ? Promise.reject(new Error('store down')) : Promise.resolve(),
    });
    h.queue.add('down-a');
    h.queue.add('down-b');
    await h.advance();
    h.queue.add('up');
    await h.advance();
    h.queue.add('down-c');
    await h.advance();
    expect(h.errors.map((e) => [e.key, e.repeated])).toEqual([
      ['down-a', false],
      ['down-b', true],
      ['down-c', false],
    ]);
  });

  it('a key added before its retry is due is processed then, and not again at the retry', async () => {
    const h = harness();
    h.failing.add('a');
    h.queue.add('a');
    await h.advance();
    h.failing.delete('a');
    h.queue.add('a');
    await h.advance();
    await h.finish('a');
    await h.advance(1_000);
    expect(h.started).toEqual(['a', 'a']);
  });

  it('resyncs at start and every interval, coalescing with what waits', async () => {
    const h = harness({ resync: { everyMs: 1_000, keys: () => [FULL] }, concurrency: 1 });
    h.queue.start();
    await h.advance();
    expect(h.started).toEqual([FULL]);
    await h.finish(FULL);
    h.queue.add('a');
    await h.advance(999);
    expect(h.started).toEqual([FULL, 'a']);
    await h.advance(1);
    // 'a' still runs: the resync's key waits for it.
    expect(h.started).toEqual([FULL, 'a']);
    await h.finish('a');
    await h.advance();
    expect(h.started).toEqual([FULL, 'a', FULL]);
    await h.finish(FULL);
    await h.advance(1_000);
    expect(h.started).toEqual([FULL, 'a', FULL, FULL]);
  });

  it('processes nothing after stop, which waits for what runs; no retry or resync fires', async () => {
    const h = harness({ resync: { everyMs: 1_000, keys: () => ['r'] } });
    h.failing.add('a');
    h.queue.start();
    h.queue.add('a');
    h.queue.add('b');
    await h.advance();
    expect(h.started).toEqual(['r', 'a', 'b']);
    let stopped = false;
    const stopping = h.queue.stop().then(() => {
      stopped = true;
    });
    await settle();
    expect(stopped).toBe(false);
    await h.finish('r', 'b');
    await stopping;
    h.queue.add('c');
    await h.advance(5_000);
    expect(h.started).toEqual(['r', 'a', 'b']);
    expect(h.timers.count).toBe(0);
    expect(h.queue.stopped).toBe(true);
  });

  it('reports idle only when nothing runs, waits or is asked for, and the depth of what does', async () => {
    const h = harness();
    expect(h.queue.idle).toBe(true);
    h.queue.add('a');
    expect(h.queue.idle).toBe(false);
    expect(h.queue.depth).toBe(1);
    await h.advance();
    h.queue.add('b');
    expect(h.queue.depth).toBe(2);
    await h.advance();
    await h.finish('a', 'b');
    expect(h.queue.idle).toBe(true);
    expect(h.queue.depth).toBe(0);
  });

  it("begins with the timers' setImmediate where they have one, and cancels it on stop", async () => {
    const timers = new ManualTimers();
    const immediates: (() => void)[] = [];
    const cancelled: unknown[] = [];
    const withImmediate = Object.assign(timers, {
      setImmediate: (callback: () => void) => immediates.push(callback),
      clearImmediate: (handle: unknown) => cancelled.push(handle),
    });
    const started: string[] = [];
    const queue = new WorkQueue<string>({
      timers: withImmediate,
      concurrency: 1,
      retry: DEFAULT_RETRY,
      process: async (key) => {
        started.push(key);
      },
      onError: () => {},
    });
    queue.add('a');
    timers.advance(10);
    expect(started).toEqual([]);
    immediates.shift()?.();
    expect(started).toEqual(['a']);
    await queue.settled();
    queue.add('b');
    await queue.stop();
    expect(cancelled).toEqual([1]);
    expect(started).toEqual(['a']);
  });

  it('counts a process that throws at once as a failure', async () => {
    const h = harness({
      process: () => {
        throw new Error('at once');
      },
    });
    h.queue.add('a');
    await h.advance();
    expect(h.errors).toEqual([{ key: 'a', repeated: false, retryInMs: 100 }]);
    expect(h.queue.idle).toBe(true);
  });
});
