import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { loopTurns, ManualTimers, settle } from '../../../test/support/manual-timers.js';
import { testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { storeTargets } from '../../../test/support/stores.js';
import { FakeRuntime } from '../../runtime/fake/fake-runtime.js';
import type { LogOptions } from '../../runtime/types.js';
import type { Store } from '../../store/store.js';
import { OutputKeeper, type OutputKeeperOptions } from './output-keeper.js';

const [sqlite] = storeTargets();
const quiet = { info: () => undefined, warn: () => undefined, error: () => undefined };

describe('OutputKeeper', () => {
  let store: Store;
  let dispose: () => Promise<void>;
  let timers: ManualTimers;
  let runtime: FakeRuntime;
  const warnings: string[] = [];

  beforeEach(async () => {
    if (!sqlite) throw new Error('no SQLite store target');
    ({ store, dispose } = await sqlite.open());
    timers = new ManualTimers(5_000);
    runtime = new FakeRuntime({ clock: () => timers.now, timers });
    warnings.length = 0;
  });
  afterEach(async () => {
    await dispose();
  });

  const keeper = (over: Partial<OutputKeeperOptions> = {}) =>
    new OutputKeeper({
      logs: (workerId, options) => runtime.logs(workerId, options),
      outputs: store.workerOutputs,
      clock: () => timers.now,
      timers,
      logger: { ...quiet, warn: (_fields, message) => warnings.push(message) },
      ...over,
    });
  const start = async (workerId: string, endpointId = 'ep-1', lines: string[] = []) => {
    await runtime.create(testWorkerSpec({ image: 'img:1', workerId, endpointId }));
    for (const line of lines) runtime.appendLog(workerId, line);
  };

  it("keeps a crashed worker's last lines once its container is removed", async () => {
    const k = keeper();
    await start('w-1', 'ep-1', ['booting', 'EXIT_ON_START: exiting with code 3']);
    runtime.exit('w-1', 3);
    const done = await k.begin({
      workerId: 'w-1',
      endpointId: 'ep-1',
      failed: true,
      reason: 'worker exited with code 3',
    });
    await runtime.remove('w-1');
    done();
    await k.close();
    expect(await store.workerOutputs.get('ep-1', 'w-1')).toEqual({
      workerId: 'w-1',
      endpointId: 'ep-1',
      endedAt: 5_000,
      failed: true,
      reason: 'worker exited with code 3',
      truncated: false,
      lines: ['booting', 'EXIT_ON_START: exiting with code 3'],
    });
    expect(warnings).toEqual([]);
  });

  it('keeps what a running worker prints while it is being removed', async () => {
    const k = keeper();
    await start('w-1', 'ep-1', ['serving']);
    const done = await k.begin({ workerId: 'w-1', endpointId: 'ep-1', failed: false, reason: 'scaled down' });
    runtime.appendLog('w-1', 'got SIGTERM, closing');
    await runtime.remove('w-1');
    done();
    await k.close();
    expect(await store.workerOutputs.get('ep-1', 'w-1')).toMatchObject({
      failed: false,
      reason: 'scaled down',
      lines: ['serving', 'got SIGTERM, closing'],
    });
  });

  it('keeps only the last lines within its limits, and says that older ones were dropped', async () => {
    const k = keeper({ limits: { lines: 2, bytes: 1024 } });
    await start('w-1', 'ep-1', ['1', '2', '3', '4']);
    runtime.exit('w-1', 1);
    const done = await k.begin({ workerId: 'w-1', endpointId: 'ep-1', failed: true, reason: 'exited' });
    await runtime.remove('w-1');
    done();
    await k.close();
    expect(await store.workerOutputs.get('ep-1', 'w-1')).toMatchObject({ lines: ['3', '4'] });
  });

  it('keeps nothing for a worker the runtime never had (its create failed), and says nothing', async () => {
    const k = keeper();
    const done = await k.begin({
      workerId: 'w-none',
      endpointId: 'ep-1',
      failed: true,
      reason: 'pull failed',
    });
    done();
    await k.close();
    expect(await store.workerOutputs.listByEndpoint('ep-1')).toEqual([]);
    expect(warnings).toEqual([]);
  });

  it('keeps an empty output for a worker that printed nothing', async () => {
    const k = keeper();
    await start('w-1');
    runtime.exit('w-1', 0);
    const done = await k.begin({ workerId: 'w-1', endpointId: 'ep-1', failed: true, reason: 'exited' });
    await runtime.remove('w-1');
    done();
    await k.close();
    expect(await store.workerOutputs.get('ep-1', 'w-1')).toMatchObject({ lines: [] });
  });

  it('keeps the most recent failed and other workers of each endpoint, each up to its count', async () => {
    const k = keeper({ retention: { failed: 3, other: 1 } });
    const end = async (workerId: string, endpointId: string, failed: boolean) => {
      await start(workerId, endpointId, [`i am ${workerId}`]);
      const done = await k.begin({
        workerId,
        endpointId,
        failed,
        reason: failed ? 'crashed' : 'scaled down',
      });
      await runtime.remove(workerId);
      done();
      await k.close();
      timers.now += 1_000;
    };
    for (const id of ['f1', 'f2', 'f3', 'f4']) await end(id, 'ep-1', true);
    for (const id of ['r1', 'r2']) await end(id, 'ep-1', false);
    await end('other-ep', 'ep-2', true);
    const kept = await store.workerOutputs.listByEndpoint('ep-1');
    expect(kept.map((w) => w.workerId)).toEqual(['r2', 'f4', 'f3', 'f2']);
    expect((await store.workerOutputs.listByEndpoint('ep-2')).map((w) => w.workerId)).toEqual(['other-ep']);
  });

  it('waits at most openTimeoutMs for the log to open, and settleMs for it to end, then keeps what it read', async () => {
    let opened = false;
    const hanging = async function* (_workerId: string, options: LogOptions): AsyncGenerator<string> {
      yield 'before the engine went silent';
      opened = true;
      options.onOpen?.();
      yield 'a line';
      await new Promise<void>((resolve) => options.signal?.addEventListener('abort', () => resolve()));
    };
    const k = keeper({ logs: hanging, openTimeoutMs: 1_000, settleMs: 2_000 });
    const begun = k.begin({ workerId: 'w-1', endpointId: 'ep-1', failed: false, reason: 'scaled down' });
    await settle();
    expect(opened).toBe(true);
    const done = await begun;
    done();
    await settle();
    expect(await store.workerOutputs.listByEndpoint('ep-1')).toEqual([]);
    await timers.advanceSettling(2_000);
    await k.close();
    expect((await store.workerOutputs.get('ep-1', 'w-1'))?.lines).toEqual([
      'before the engine went silent',
      'a line',
    ]);

    // A log that never opens holds the removal for openTimeoutMs only.
    const never = keeper({
      logs: () => ({ [Symbol.asyncIterator]: () => ({ next: () => new Promise(() => undefined) }) }),
      openTimeoutMs: 1_000,
    });
    let begunAfter = false;
    const waiting = never
      .begin({ workerId: 'w-2', endpointId: 'ep-1', failed: false, reason: 'x' })
      .then(() => {
        begunAfter = true;
      });
    await timers.advanceSettling(999);
    expect(begunAfter).toBe(false);
    await timers.advanceSettling(1);
    await waiting;
    expect(begunAfter).toBe(true);
  });

  it('forgets the output of deleted endpoints at the first pass and when one goes, and keeps none for them', async () => {
    await store.workerOutputs.save({
      workerId: 'stale',
      endpointId: 'ep-gone',
      endedAt: 1,
      failed: true,
      reason: 'x',
      truncated: false,
      lines: ['old'],
    });
    const k = keeper();
    k.retain(new Set(['ep-1']));
    // The delete is not awaited by retain(); on SQLite it is promise callbacks only, done within a turn of the loop.
    await loopTurns(1);
    expect(await store.workerOutputs.listByEndpoint('ep-gone')).toEqual([]);
    await start('w-1', 'ep-gone', ['line']);
    const done = await k.begin({
      workerId: 'w-1',
      endpointId: 'ep-gone',
      failed: false,
      reason: 'its endpoint was deleted',
    });
    await runtime.remove('w-1');
    done();
    await k.close();
    expect(await store.workerOutputs.listByEndpoint('ep-gone')).toEqual([]);
  });
});
