import { afterEach, describe, expect, it, vi } from 'vitest';
import { sampleEndpoint, storeEndpoint } from '../../test/support/fixtures.js';
import { storeTargets } from '../../test/support/stores.js';
import type { Store } from '../store/store.js';
import { pendingRecord } from './workers/managed-worker.js';
import { writeWorkers } from './write-back.js';

describe('writeWorkers', () => {
  let dispose: (() => Promise<void>) | undefined;
  afterEach(() => dispose?.());

  it('writes each changed row once when several reconciles report at once', async () => {
    const [sqlite] = storeTargets();
    if (!sqlite) throw new Error('no sqlite target');
    const opened = await sqlite.open();
    dispose = opened.dispose;
    const store: Store = opened.store;
    const endpoint = sampleEndpoint();
    await storeEndpoint(store, endpoint);
    const records = new Map(
      Array.from({ length: 20 }, () => pendingRecord(endpoint, 0)).map((r) => [r.id, r] as const),
    );
    const dirty = new Set(records.keys());
    const upsert = vi.spyOn(store.workers, 'upsert');
    const recordOf = (id: string) => records.get(id);
    await Promise.all([writeWorkers(store, dirty, recordOf, 0), writeWorkers(store, dirty, recordOf, 0)]);
    expect(upsert).toHaveBeenCalledTimes(20);
    expect(dirty.size).toBe(0);
    expect(await store.workers.listByEndpoint(endpoint.id)).toHaveLength(20);
  });
});
