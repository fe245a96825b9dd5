import { describe, expect, it } from 'vitest';
import { ManualTimers, settle } from '../../../test/support/manual-timers.js';
import { testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { LABELS, RuntimeError, type RuntimeEvent, type WorkerSpec } from '../types.js';
import { FakeRuntime } from './fake-runtime.js';

function spec(workerId: string, endpointId = 'ep1', overrides: Partial<WorkerSpec> = {}): WorkerSpec {
  return testWorkerSpec({ image: 'img:1', workerId, endpointId, ...overrides });
}

function setup(options: { startDelayMs?: number; pullDelayMs?: number } = {}) {
  const timers = new ManualTimers();
  const runtime = new FakeRuntime({ clock: () => 1_000_000 + timers.now, timers, ...options });
  const events: RuntimeEvent[] = [];
  runtime.watch((event) => events.push(event));
  return { timers, runtime, events };
}

describe('FakeRuntime', () => {
  it('creates at once without delays, with a unique fake address', async () => {
    const { runtime, events } = setup();
    const a = await runtime.create(spec('a'));
    const b = await runtime.create(spec('b'));
    expect(a.phase).toBe('running');
    expect(a.address).toEqual({ host: '127.0.0.1', port: expect.any(Number) });
    expect(a.address?.port).not.toBe(b.address?.port);
    expect(a.createdAt).toBe(1_000_000);
    expect(runtime.counters).toMatchObject({ creates: 2, removes: 0 });
    expect(events).toEqual([
      { type: 'started', workerId: 'a' },
      { type: 'started', workerId: 'b' },
    ]);
  });

  it('goes starting -> running after the start delay, on the injected timers', async () => {
    const { runtime, timers } = setup({ startDelayMs: 5_000 });
    let resolved = false;
    const created = runtime.create(spec('a')).then((w) => {
      resolved = true;
      return w;
    });
    await settle();
    expect((await runtime.inspect('a'))?.phase).toBe('starting');
    expect(await runtime.list({ [LABELS.endpoint]: 'ep1' })).toHaveLength(1);
    await timers.advanceSettling(4_999);
    expect(resolved).toBe(false);
    await timers.advanceSettling(1);
    expect(resolved).toBe(true);
    expect((await created).phase).toBe('running');
    expect((await runtime.inspect('a'))?.phase).toBe('running');
  });

  it('pulls an image once, reporting progress, then uses it without a pull', async () => {
    const { runtime, timers } = setup({ pullDelayMs: 1_000, startDelayMs: 500 });
    const progress: unknown[] = [];
    const first = runtime.create(spec('a'), (p) => progress.push(p));
    await settle();
    expect((await runtime.inspect('a'))?.phase).toBe('pulling');
    await timers.advanceSettling(1_000);
    expect((await runtime.inspect('a'))?.phase).toBe('starting');
    await timers.advanceSettling(500);
    expect((await first).phase).toBe('running');
    expect(progress).toEqual([
      { percent: 0, message: 'pulling img:1: 0%' },
      { percent: 100, message: 'pulling img:1: 100%' },
    ]);
    const second = runtime.create(spec('b'));
    await settle();
    expect((await runtime.inspect('b'))?.phase).toBe('starting');
    await timers.advanceSettling(500);
    await second;
    expect(runtime.counters.pulls).toBe(1);
  });

  it('fails pulls and creates on demand', async () => {
    const { runtime } = setup();
    runtime.failPull('bad:1');
    await expect(runtime.create(spec('a', 'ep1', { image: 'bad:1' }))).rejects.toMatchObject({
      code: 'IMAGE_PULL_FAILED',
    });
    runtime.failCreate('no space left', 2);
    await expect(runtime.create(spec('b'))).rejects.toMatchObject({
      code: 'RUNTIME_ERROR',
      message: 'no space left',
    });
    await expect(runtime.create(spec('c'))).rejects.toBeInstanceOf(RuntimeError);
    await expect(runtime.create(spec('d'))).resolves.toMatchObject({ phase: 'running' });
    runtime.failCreate('always');
    await expect(runtime.create(spec('e'))).rejects.toMatchObject({ message: 'always' });
    runtime.clearFailures();
    await expect(runtime.create(spec('a', 'ep1', { image: 'bad:1' }))).resolves.toBeDefined();
    expect(runtime.counters).toMatchObject({ creates: 2, createFailures: 4 });
    expect(runtime.size).toBe(2);
  });

  it('a worker removed or exiting while it starts makes create fail', async () => {
    const { runtime, timers, events } = setup({ startDelayMs: 1_000 });
    const a = runtime.create(spec('a'));
    const b = runtime.create(spec('b'));
    await settle();
    await runtime.remove('a');
    runtime.exit('b', 1);
    await expect(a).rejects.toMatchObject({ code: 'RUNTIME_ERROR' });
    await expect(b).rejects.toMatchObject({ code: 'RUNTIME_ERROR' });
    expect(timers.count).toBe(0);
    expect(await runtime.inspect('a')).toBeUndefined();
    expect(await runtime.inspect('b')).toMatchObject({ phase: 'exited', exitCode: 1 });
    expect(events).toEqual([
      { type: 'removed', workerId: 'a' },
      { type: 'exited', workerId: 'b', exitCode: 1 },
    ]);
  });

  it('exit marks the worker exited once and emits one event', async () => {
    const { runtime, events } = setup();
    await runtime.create(spec('a'));
    runtime.exit('a', 137);
    runtime.exit('a', 1);
    runtime.exit('nope', 1);
    const exited = await runtime.inspect('a');
    expect(exited).toMatchObject({ phase: 'exited', exitCode: 137, message: 'exited with code 137' });
    expect(exited?.exitReason).toBeUndefined();
    expect(events.filter((e) => e.type === 'exited')).toEqual([
      { type: 'exited', workerId: 'a', exitCode: 137 },
    ]);
    expect(await runtime.stats('a')).toBeUndefined();
  });

  it('outOfMemory ends a worker the way Docker reports an OOM kill: 137, out-of-memory, its limit', async () => {
    const { runtime, events } = setup();
    await runtime.create(spec('a', 'ep1', { memoryBytes: 256 * 1024 * 1024 }));
    runtime.outOfMemory('a');
    expect(await runtime.inspect('a')).toMatchObject({
      phase: 'exited',
      exitCode: 137,
      exitReason: 'out-of-memory',
      memoryLimitBytes: 256 * 1024 * 1024,
      message: 'ran out of memory: limit 256 MiB (exit code 137)',
    });
    expect(events.filter((e) => e.type === 'exited')).toEqual([
      { type: 'exited', workerId: 'a', exitCode: 137 },
    ]);
  });

  it('returns copies: callers cannot change what the runtime holds', async () => {
    const { runtime } = setup();
    const created = await runtime.create(spec('a', 'ep1', { labels: { x: '1' } }));
    created.labels.x = '2';
    const [listed] = await runtime.list({ x: '1' });
    expect(listed?.workerId).toBe('a');
  });

  it('logs: tail, follow until exit, follow until abort', async () => {
    const { runtime } = setup();
    await runtime.create(spec('a'));
    for (const line of ['one', 'two', 'three']) runtime.appendLog('a', line);
    const all: string[] = [];
    for await (const line of runtime.logs('a', { follow: false })) all.push(line);
    expect(all).toEqual(['one', 'two', 'three']);
    const tail: string[] = [];
    for await (const line of runtime.logs('a', { follow: false, tail: 2 })) tail.push(line);
    expect(tail).toEqual(['two', 'three']);

    const followed: string[] = [];
    const following = (async () => {
      for await (const line of runtime.logs('a', { follow: true, tail: 0 })) followed.push(line);
    })();
    await settle();
    runtime.appendLog('a', 'four');
    await settle();
    runtime.exit('a', 0);
    await following;
    expect(followed).toEqual(['four']);

    await runtime.create(spec('b'));
    const controller = new AbortController();
    const aborted = (async () => {
      const out: string[] = [];
      for await (const line of runtime.logs('b', { follow: true, signal: controller.signal })) out.push(line);
      return out;
    })();
    runtime.appendLog('b', 'x');
    await settle();
    controller.abort();
    expect(await aborted).toEqual(['x']);
  });

  it('list uses the endpoint index and still honours every label', async () => {
    const { runtime } = setup();
    for (let e = 0; e < 1_000; e++) {
      for (let w = 0; w < 10; w++) {
        await runtime.create(spec(`e${e}w${w}`, `e${e}`, { revision: w < 5 ? 1 : 2 }));
      }
    }
    expect(await runtime.list({ [LABELS.endpoint]: 'e7', [LABELS.revision]: '2' })).toHaveLength(5);
    expect(await runtime.list({ [LABELS.worker]: 'e7w3' })).toHaveLength(1);
    expect(await runtime.list({ [LABELS.worker]: 'e7w3', [LABELS.endpoint]: 'e8' })).toHaveLength(0);
    expect(await runtime.list({ [LABELS.managed]: 'true' })).toHaveLength(10_000);
    // A full reconcile pass lists every endpoint. Measured against lists the index cannot serve (by revision alone,
    // a scan of all 10,000), so that a loaded machine slows both sides: 1,000 indexed lists visit 10,000 workers in
    // all, 20 scans visit 200,000; without the index the first would cost fifty times the second.
    const timed = async (lists: number, labels: (i: number) => Record<string, string>) => {
      const started = performance.now();
      for (let i = 0; i < lists; i++) await runtime.list(labels(i));
      return performance.now() - started;
    };
    const indexed = await timed(1_000, (e) => ({ [LABELS.endpoint]: `e${e}` }));
    const scanned = await timed(20, (i) => ({ [LABELS.revision]: String(1 + (i % 2)) }));
    expect(indexed).toBeLessThan(scanned);
    await runtime.remove('e7w3');
    expect(await runtime.list({ [LABELS.endpoint]: 'e7' })).toHaveLength(9);
  });
});
