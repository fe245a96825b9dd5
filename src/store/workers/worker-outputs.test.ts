import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteEndpoint, sampleEndpoint } from '../../../test/support/fixtures.js';
import { storeTargets } from '../../../test/support/stores.js';
import type { Store } from '../store.js';
import type { KeptOutput } from './worker-outputs.js';

const kept = (workerId: string, endpointId: string, over: Partial<KeptOutput> = {}): KeptOutput => ({
  workerId,
  endpointId,
  endedAt: 1_000,
  failed: true,
  reason: 'worker exited with code 3',
  truncated: false,
  lines: ['starting', 'EXIT_ON_START: exiting with code 3'],
  ...over,
});

describe.each(storeTargets())('worker outputs on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
  });
  afterEach(async () => {
    await dispose();
  });

  it('reads back a kept output exactly, empty and blank lines included', async () => {
    const output = kept('w-1', 'ep-1', { lines: ['', 'a  ', 'ünïcode ✓', ''], truncated: true });
    await store.workerOutputs.save(output);
    expect(await store.workerOutputs.get('ep-1', 'w-1')).toEqual(output);
    await store.workerOutputs.save(kept('w-2', 'ep-1', { lines: [] }));
    expect((await store.workerOutputs.get('ep-1', 'w-2'))?.lines).toEqual([]);
  });

  it("finds a worker's output only under its own endpoint", async () => {
    await store.workerOutputs.save(kept('w-1', 'ep-1'));
    expect(await store.workerOutputs.get('ep-2', 'w-1')).toBeUndefined();
    expect(await store.workerOutputs.get('ep-1', 'w-9')).toBeUndefined();
  });

  it('replaces what was kept for the same worker', async () => {
    await store.workerOutputs.save(
      kept('w-1', 'ep-1', { lines: ['first'], failed: false, reason: 'scaled down' }),
    );
    await store.workerOutputs.save(kept('w-1', 'ep-1', { lines: ['first', 'second'], endedAt: 2_000 }));
    expect(await store.workerOutputs.get('ep-1', 'w-1')).toMatchObject({
      lines: ['first', 'second'],
      endedAt: 2_000,
      failed: true,
      reason: 'worker exited with code 3',
    });
  });

  it("lists one endpoint's ended workers, the most recent first, and deletes some", async () => {
    await store.workerOutputs.save(kept('w-1', 'ep-1', { endedAt: 1_000 }));
    await store.workerOutputs.save(
      kept('w-3', 'ep-1', { endedAt: 3_000, failed: false, reason: 'scaled down' }),
    );
    await store.workerOutputs.save(kept('w-2', 'ep-1', { endedAt: 2_000 }));
    await store.workerOutputs.save(kept('w-4', 'ep-2', { endedAt: 4_000 }));
    const listed = await store.workerOutputs.listByEndpoint('ep-1');
    expect(listed.map((w) => w.workerId)).toEqual(['w-3', 'w-2', 'w-1']);
    expect(listed[0]).toEqual({
      workerId: 'w-3',
      endpointId: 'ep-1',
      endedAt: 3_000,
      failed: false,
      reason: 'scaled down',
      truncated: false,
    });
    await store.workerOutputs.delete(['w-3', 'w-1']);
    await store.workerOutputs.delete([]);
    expect((await store.workerOutputs.listByEndpoint('ep-1')).map((w) => w.workerId)).toEqual(['w-2']);
    expect((await store.workerOutputs.listByEndpoint('ep-2')).map((w) => w.workerId)).toEqual(['w-4']);
  });

  it('forgets the output of deleted and unknown endpoints, and keeps that of live ones', async () => {
    const live = sampleEndpoint();
    const deleted = sampleEndpoint();
    for (const endpoint of [live, deleted]) {
      await store.endpoints.create(endpoint, [], {
        at: 1,
        ownerId: endpoint.ownerId,
        actor: 'test',
        action: 'create',
        targetId: endpoint.id,
      });
    }
    await deleteEndpoint(store, deleted);
    await store.workerOutputs.save(kept('w-live', live.id));
    await store.workerOutputs.save(kept('w-deleted', deleted.id));
    await store.workerOutputs.save(kept('w-unknown', 'ep-never'));
    await store.workerOutputs.deleteOfGoneEndpoints();
    expect(await store.workerOutputs.get(live.id, 'w-live')).toBeDefined();
    expect(await store.workerOutputs.get(deleted.id, 'w-deleted')).toBeUndefined();
    expect(await store.workerOutputs.get('ep-never', 'w-unknown')).toBeUndefined();
  });

  it('keeps 256 KiB of output in one row', async () => {
    const line = 'x'.repeat(1023);
    const lines = Array.from({ length: 256 }, () => line);
    await store.workerOutputs.save(kept('w-big', 'ep-1', { lines }));
    expect((await store.workerOutputs.get('ep-1', 'w-big'))?.lines).toEqual(lines);
  });
});
