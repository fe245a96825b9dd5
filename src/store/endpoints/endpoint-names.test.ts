import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteEndpoint, sampleEndpoint, storeEndpoint } from '../../../test/support/fixtures.js';
import { storeTargets } from '../../../test/support/stores.js';
import type { Database } from '../schema.js';
import type { Store } from '../store.js';

const LIMIT = 20;

describe.each(storeTargets())('endpoints by id, appName or name on $name', (target) => {
  let store: Store;
  let db: Kysely<Database>;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    ({ store, db, dispose } = await target.open());
  });
  afterEach(async () => {
    await dispose();
  });

  const ids = (found: { id: string }[]) => found.map((e) => e.id);

  it("finds an owner's endpoints by name, never another owner's, the id's and appName's match first", async () => {
    const sdxl = sampleEndpoint({ patch: { name: 'sdxl' } });
    const twin = sampleEndpoint({ patch: { name: 'sdxl' } });
    const others = sampleEndpoint({ ownerId: 'owner-b', patch: { name: 'sdxl' } });
    const appNamed = sampleEndpoint({ patch: { name: 'other', appName: 'sdxl' } });
    for (const e of [sdxl, twin, others, appNamed]) await storeEndpoint(store, e);

    expect(ids(await store.endpoints.matching('sdxl', { ownerId: 'owner-a' }, LIMIT))).toEqual([
      appNamed.id,
      sdxl.id,
      twin.id,
    ]);
    expect(ids(await store.endpoints.matching('sdxl', { ownerId: 'owner-b' }, LIMIT))).toEqual([others.id]);
    expect(
      ids(await store.endpoints.matching('sdxl', { ownerId: 'owner-a', endpointId: twin.id }, LIMIT)),
    ).toEqual([twin.id]);
    // Every owner's (an admin's key), the id's match first even past the limit of the names'.
    expect(ids(await store.endpoints.matching(others.id, {}, 1))).toEqual([others.id]);
    expect(ids(await store.endpoints.matching('sdxl', {}, LIMIT))).toHaveLength(4);
  });

  it('follows a rename and forgets a deleted endpoint', async () => {
    const endpoint = sampleEndpoint({ patch: { name: 'before' } });
    await storeEndpoint(store, endpoint);
    await store.endpoints.mutate(
      'owner-a',
      endpoint.id,
      (current) => ({ next: { ...current, spec: { ...current.spec, name: 'after' } }, events: [] }),
      () => ({ at: 1, ownerId: 'owner-a', actor: 'test', action: 'update', targetId: endpoint.id }),
    );
    expect(await store.endpoints.matching('before', { ownerId: 'owner-a' }, LIMIT)).toEqual([]);
    expect(ids(await store.endpoints.matching('after', { ownerId: 'owner-a' }, LIMIT))).toEqual([
      endpoint.id,
    ]);
    await deleteEndpoint(store, endpoint);
    expect(await store.endpoints.matching('after', { ownerId: 'owner-a' }, LIMIT)).toEqual([]);
  });

  it('names the endpoints stored before migration 0017 from their specs', async () => {
    const old = sampleEndpoint({ patch: { name: 'sdxl' } });
    await storeEndpoint(store, old);
    await db.schema.dropIndex('endpoints_name_live').execute();
    await db.schema.alterTable('endpoints').dropColumn('name').execute();
    await sql`delete from kysely_migration where name = '0017-endpoint-names'`.execute(db);
    expect(await store.migrate()).toEqual(['0017-endpoint-names']);
    expect(ids(await store.endpoints.matching('sdxl', { ownerId: 'owner-a' }, LIMIT))).toEqual([old.id]);
  });
});
