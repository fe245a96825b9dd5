import fc from 'fast-check';
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteEndpoint, sampleEndpoint } from '../../test/support/fixtures.js';
import { storeTargets } from '../../test/support/stores.js';
import type { AuditEntry } from './audit.js';
import type { Database } from './schema.js';
import type { Store } from './store.js';

const audit = (action: string, targetId: string): AuditEntry => ({
  at: 1,
  ownerId: 'owner-a',
  actor: 'test',
  action,
  targetId,
});

describe.each(storeTargets())('store on $name', (target) => {
  let store: Store;
  let db: Kysely<Database>;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    ({ store, db, dispose } = await target.open());
  });
  afterEach(async () => {
    await dispose();
  });

  it('migrating twice applies nothing the second time', async () => {
    expect(await store.migrate()).toEqual([]);
  });

  it('creates and reads back an endpoint exactly', async () => {
    const endpoint = sampleEndpoint({ patch: { env: [{ key: 'A', value: 'b' }] } });
    await store.endpoints.create(
      endpoint,
      [{ at: 1, type: 'created', message: 'created' }],
      audit('create', endpoint.id),
    );
    expect(await store.endpoints.get('owner-a', endpoint.id)).toEqual(endpoint);
  });

  it("hides another owner's endpoint", async () => {
    const endpoint = sampleEndpoint();
    await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    expect(await store.endpoints.get('owner-b', endpoint.id)).toBeUndefined();
    expect((await store.endpoints.list('owner-b', { limit: 10, offset: 0 })).total).toBe(0);
  });

  it('refuses a second live endpoint with the same appName, and frees it on delete', async () => {
    const first = sampleEndpoint({ patch: { appName: 'taken' } });
    const second = sampleEndpoint({ patch: { appName: 'taken' } });
    await store.endpoints.create(first, [], audit('create', first.id));
    await expect(store.endpoints.create(second, [], audit('create', second.id))).rejects.toMatchObject({
      code: 'APP_NAME_TAKEN',
    });
    await deleteEndpoint(store, first);
    expect(await store.endpoints.get('owner-a', first.id)).toBeUndefined();
    await store.endpoints.create(second, [], audit('create', second.id));
    expect((await store.endpoints.findByAppName('taken'))?.id).toBe(second.id);
  });

  it("refuses a second live endpoint of one owner with the same openaiModel, frees it on delete, and finds an owner's models", async () => {
    const first = sampleEndpoint({ patch: { openaiModel: 'llama-3' } });
    const second = sampleEndpoint({ patch: { openaiModel: 'llama-3' } });
    const other = sampleEndpoint({ ownerId: 'owner-b', patch: { openaiModel: 'llama-3' } });
    const plain = sampleEndpoint();
    for (const endpoint of [first, other, plain])
      await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    await expect(store.endpoints.create(second, [], audit('create', second.id))).rejects.toMatchObject({
      code: 'OPENAI_MODEL_TAKEN',
    });
    // An update to a name another endpoint of the owner has is refused as well.
    const renamed = sampleEndpoint({ patch: { openaiModel: 'qwen' } });
    await store.endpoints.create(renamed, [], audit('create', renamed.id));
    await expect(
      store.endpoints.mutate(
        'owner-a',
        renamed.id,
        (current) => ({
          next: { ...current, spec: { ...current.spec, openaiModel: 'llama-3' } },
          events: [],
        }),
        () => audit('update', renamed.id),
      ),
    ).rejects.toMatchObject({ code: 'OPENAI_MODEL_TAKEN' });
    const models = async (reach: { ownerId?: string; endpointId?: string }) =>
      (await store.endpoints.withOpenAIModel(reach, 10)).map((e) => [e.id, e.spec.openaiModel]);
    expect(await models({ ownerId: 'owner-a' })).toEqual([
      [first.id, 'llama-3'],
      [renamed.id, 'qwen'],
    ]);
    expect(await models({ ownerId: 'owner-a', endpointId: renamed.id })).toEqual([[renamed.id, 'qwen']]);
    await deleteEndpoint(store, first);
    await store.endpoints.create(second, [], audit('create', second.id));
    expect(await models({ ownerId: 'owner-a' })).toEqual([
      [second.id, 'llama-3'],
      [renamed.id, 'qwen'],
    ]);
  });

  it('lists newest first in pages with the total', async () => {
    const created = [];
    for (let i = 0; i < 5; i++) {
      const endpoint = sampleEndpoint({ at: 1000 + i });
      created.push(endpoint.id);
      await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    }
    const first = await store.endpoints.list('owner-a', { limit: 2, offset: 0 });
    const third = await store.endpoints.list('owner-a', { limit: 2, offset: 4 });
    expect(first.total).toBe(5);
    expect(first.endpoints.map((e) => e.id)).toEqual([created[4], created[3]]);
    expect(third.endpoints.map((e) => e.id)).toEqual([created[0]]);
  });

  it("keeps each owner's total exact over any sequence of creates and deletes", async () => {
    const owners = ['owner-a', 'owner-b'];
    const live = new Map<string, string[]>(owners.map((o) => [o, []]));
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.record({ create: fc.boolean(), owner: fc.constantFrom(...owners), pick: fc.nat() }), {
          maxLength: 8,
        }),
        async (operations) => {
          for (const { create, owner, pick } of operations) {
            const ids = live.get(owner) as string[];
            if (create || ids.length === 0) {
              const endpoint = sampleEndpoint({ ownerId: owner });
              await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
              ids.push(endpoint.id);
            } else {
              const [id] = ids.splice(pick % ids.length, 1) as [string];
              await deleteEndpoint(store, { ownerId: owner, id });
            }
          }
          for (const owner of [...owners, 'owner-none']) {
            const { total } = await store.endpoints.list(owner, { limit: 1, offset: 0 });
            expect(total).toBe(live.get(owner)?.length ?? 0);
          }
        },
      ),
      { numRuns: 15 },
    );
  });

  it('an upgrade from a database made before endpoint_counts counts the live endpoints already there', async () => {
    const kept = [sampleEndpoint(), sampleEndpoint(), sampleEndpoint({ ownerId: 'owner-b' })];
    const removed = sampleEndpoint();
    for (const endpoint of [...kept, removed]) {
      await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    }
    await deleteEndpoint(store, removed);
    // Back to the schema before migration 0003, data included (later migrations may stay: they are applied in any order).
    await db.schema.dropTable('endpoint_counts').execute();
    await sql`delete from kysely_migration where name = '0003-endpoint-counts'`.execute(db);
    expect(await store.migrate()).toEqual(['0003-endpoint-counts']);
    const page = { limit: 10, offset: 0 };
    expect((await store.endpoints.list('owner-a', page)).total).toBe(2);
    expect((await store.endpoints.list('owner-b', page)).total).toBe(1);
  });

  it("an upgrade from a database made before 0009 fills each live endpoint's worker numbers from its spec", async () => {
    const workers = (minWorkers: number, maxWorkers: number, gpusPerWorker: number) =>
      ({ workers: { ...sampleEndpoint().spec.workers, minWorkers, maxWorkers, gpusPerWorker } }) as const;
    const small = sampleEndpoint({ patch: workers(1, 2, 1) });
    // A lone surrogate in a stored spec: PostgreSQL's ::json refuses it, so the fill must not parse there.
    const odd = sampleEndpoint({ patch: { ...workers(2, 3, 2), env: [{ key: 'X', value: '\ud800' }] } });
    const other = sampleEndpoint({ ownerId: 'owner-b', patch: workers(0, 5, 4) });
    const removed = sampleEndpoint({ patch: workers(7, 7, 1) });
    for (const endpoint of [small, odd, other, removed]) {
      await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    }
    await deleteEndpoint(store, removed);
    const before = await store.endpoints.use('owner-a');
    expect(before).toEqual({ endpoints: 2, minGpus: 1 + 4, maxGpus: 2 + 6, workers: 5 });
    // Back to the schema before migration 0009, data included.
    for (const index of ['endpoints_owner_use', 'endpoints_live_versions']) {
      await db.schema.dropIndex(index).execute();
    }
    for (const column of ['min_workers', 'max_workers', 'gpus_per_worker']) {
      await db.schema.alterTable('endpoints').dropColumn(column).execute();
    }
    await sql`delete from kysely_migration where name = '0009-endpoint-use'`.execute(db);
    expect(await store.migrate()).toEqual(['0009-endpoint-use']);
    expect(await store.endpoints.use('owner-a')).toEqual(before);
    expect(await store.endpoints.use('owner-b')).toEqual({
      endpoints: 1,
      minGpus: 0,
      maxGpus: 20,
      workers: 5,
    });
  });

  it("quota use follows an update's worker numbers and forgets a deleted endpoint", async () => {
    const endpoint = sampleEndpoint();
    await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    const grown = { ...endpoint.spec.workers, minWorkers: 2, maxWorkers: 4, gpusPerWorker: 2 };
    await store.endpoints.mutate(
      'owner-a',
      endpoint.id,
      (current) => ({ next: { ...current, spec: { ...current.spec, workers: grown } }, events: [] }),
      () => audit('update', endpoint.id),
    );
    expect(await store.endpoints.use('owner-a')).toEqual({
      endpoints: 1,
      minGpus: 4,
      maxGpus: 8,
      workers: 4,
    });
    await deleteEndpoint(store, endpoint);
    expect(await store.endpoints.use('owner-a')).toEqual({
      endpoints: 0,
      minGpus: 0,
      maxGpus: 0,
      workers: 0,
    });
  });

  it('lists live versions oldest first and reads back the changed ones with theirs', async () => {
    const [first, second, gone] = [
      sampleEndpoint({ at: 1 }),
      sampleEndpoint({ at: 2 }),
      sampleEndpoint({ at: 3 }),
    ];
    for (const endpoint of [first, second, gone]) {
      await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    }
    await deleteEndpoint(store, gone);
    const versions = await store.endpoints.liveVersions();
    expect(versions.map((v) => v.id)).toEqual([first.id, second.id]);
    await store.endpoints.reportStatus(
      second.id,
      { state: 'serving', error: '', message: '' },
      { at: 4, type: 'state', message: 'serving' },
    );
    const after = await store.endpoints.liveVersions();
    expect(after[0]).toEqual(versions[0]);
    expect(after[1]?.version).toBeGreaterThan(versions[1]?.version ?? Infinity);
    const read = await store.endpoints.getMany([second.id, gone.id, 'nope']);
    expect(read).toHaveLength(1);
    expect(read[0]?.version).toBe(after[1]?.version);
    expect(read[0]?.endpoint.status.state).toBe('serving');
  });

  it('keeps the first installation id it stored, whatever id a later start offers', async () => {
    expect(await store.installation.ensure('inst-first', 1)).toBe('inst-first');
    expect(await store.installation.ensure('inst-second', 2)).toBe('inst-first');
  });

  it('mutate writes the change with its events and audit entry', async () => {
    const endpoint = sampleEndpoint();
    await store.endpoints.create(
      endpoint,
      [{ at: 1, type: 'created', message: 'c' }],
      audit('create', endpoint.id),
    );
    const updated = await store.endpoints.mutate(
      'owner-a',
      endpoint.id,
      (current) => ({
        next: { ...current, revision: 2, spec: { ...current.spec, name: 'renamed' } },
        events: [{ at: 2, type: 'updated', message: 'u', data: { fields: ['name'] } }],
      }),
      () => audit('update', endpoint.id),
    );
    expect(updated?.spec.name).toBe('renamed');
    expect((await store.endpoints.get('owner-a', endpoint.id))?.revision).toBe(2);
    const events = await store.events.list(endpoint.id, { afterId: 0, limit: 10 });
    expect(events.map((e) => e.type)).toEqual(['created', 'updated']);
    expect(events[1]?.data).toEqual({ fields: ['name'] });
    expect((await store.audit.list('owner-a', 10)).map((a) => a.action)).toEqual(['update', 'create']);
  });

  it('mutate returns undefined for a missing endpoint and writes nothing when the change throws', async () => {
    const endpoint = sampleEndpoint();
    await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    expect(
      await store.endpoints.mutate(
        'owner-a',
        'nope',
        (c) => ({ next: c, events: [] }),
        () => audit('x', 'nope'),
      ),
    ).toBeUndefined();
    await expect(
      store.endpoints.mutate(
        'owner-a',
        endpoint.id,
        () => {
          throw new Error('invalid');
        },
        () => audit('update', endpoint.id),
      ),
    ).rejects.toThrow('invalid');
    expect((await store.audit.list('owner-a', 10)).map((a) => a.action)).toEqual(['create']);
  });

  it('concurrent mutations both apply (optimistic retry)', async () => {
    const endpoint = sampleEndpoint({ patch: { env: [] } });
    await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    const addEnv = (key: string) =>
      store.endpoints.mutate(
        'owner-a',
        endpoint.id,
        (current) => ({
          next: { ...current, spec: { ...current.spec, env: [...current.spec.env, { key, value: '1' }] } },
          events: [],
        }),
        () => audit('update', endpoint.id),
      );
    await Promise.all([addEnv('A'), addEnv('B'), addEnv('C')]);
    const keys = (await store.endpoints.get('owner-a', endpoint.id))?.spec.env.map((e) => e.key).sort();
    expect(keys).toEqual(['A', 'B', 'C']);
  });

  it('stores API keys, finds them by id and revokes them once', async () => {
    await store.apiKeys.insert({
      id: 'k1',
      ownerId: 'o',
      name: 'ci',
      secretHash: 'h',
      admin: true,
      createdAt: 5,
    });
    expect(await store.apiKeys.findById('k1')).toMatchObject({ ownerId: 'o', admin: true, revokedAt: null });
    expect(await store.apiKeys.countActive()).toBe(1);
    expect(await store.apiKeys.revoke('k1', 9)).toBe(true);
    expect(await store.apiKeys.revoke('k1', 10)).toBe(false);
    expect((await store.apiKeys.findById('k1'))?.revokedAt).toBe(9);
    expect(await store.apiKeys.countActive()).toBe(0);
  });

  it('keeps registry credentials per owner and never lists their secret', async () => {
    const record = {
      id: 'c1',
      ownerId: 'owner-a',
      name: 'hub',
      username: 'u',
      encryptedSecret: 'x',
      createdAt: 3,
    };
    await store.credentials.insert(record, audit('credentials.save', 'c1'));
    expect(await store.credentials.get('owner-a', 'c1')).toEqual(record);
    expect(await store.credentials.get('owner-b', 'c1')).toBeUndefined();
    expect(await store.credentials.list('owner-a')).toEqual([
      { id: 'c1', ownerId: 'owner-a', name: 'hub', username: 'u', createdAt: 3 },
    ]);
    expect(await store.credentials.delete('owner-b', 'c1', audit('credentials.delete', 'c1'))).toBe(false);
    expect(await store.credentials.delete('owner-a', 'c1', audit('credentials.delete', 'c1'))).toBe(true);
    expect(await store.credentials.ids('owner-a')).toEqual(new Set());
  });
  it("lists the workers of exactly one page of an owner's endpoints, as the endpoint list pages them", async () => {
    const mine = [1, 2, 3].map((i) => sampleEndpoint({ at: 1_000 + i }));
    const theirs = sampleEndpoint({ ownerId: 'owner-b', at: 2_000 });
    for (const endpoint of [...mine, theirs]) {
      await store.endpoints.create(endpoint, [], audit('create', endpoint.id));
    }
    const base = {
      ownerId: 'owner-a',
      revision: 1,
      status: { state: 'running' as const, error: '', message: '' },
      healthy: true,
      gpuUuids: [],
      address: null,
      updatedAt: 10,
      readyAt: null,
    };
    const workers = [
      { ...base, id: 'w-old', endpointId: mine[0]?.id as string, createdAt: 10 },
      { ...base, id: 'w-mid', endpointId: mine[1]?.id as string, createdAt: 11 },
      { ...base, id: 'w-new-2', endpointId: mine[2]?.id as string, createdAt: 13 },
      { ...base, id: 'w-new-1', endpointId: mine[2]?.id as string, createdAt: 12 },
      { ...base, id: 'w-theirs', endpointId: theirs.id, ownerId: 'owner-b', createdAt: 14 },
    ];
    for (const worker of workers) await store.workers.upsert(worker);
    const ids = (map: Map<string, { id: string }[]>) =>
      Object.fromEntries([...map].map(([endpointId, list]) => [endpointId, list.map((w) => w.id)]));

    const firstPage = { limit: 2, offset: 0 };
    const { endpoints } = await store.endpoints.list('owner-a', firstPage);
    expect(endpoints.map((e) => e.id)).toEqual([mine[2]?.id, mine[1]?.id]);
    expect(ids(await store.workers.listForEndpointPage('owner-a', firstPage))).toEqual({
      [mine[2]?.id as string]: ['w-new-1', 'w-new-2'],
      [mine[1]?.id as string]: ['w-mid'],
    });
    expect(ids(await store.workers.listForEndpointPage('owner-a', { limit: 2, offset: 2 }))).toEqual({
      [mine[0]?.id as string]: ['w-old'],
    });
    expect(ids(await store.workers.listForEndpointPage('owner-c', firstPage))).toEqual({});
  });

  it('keeps workers: upsert creates then updates, listed per endpoint oldest first', async () => {
    const worker = {
      id: 'w1',
      endpointId: 'e1',
      ownerId: 'owner-a',
      revision: 1,
      status: { state: 'pending' as const, error: '', message: 'needs 1 GPU' },
      healthy: false,
      gpuUuids: [],
      address: null,
      createdAt: 10,
      updatedAt: 10,
      readyAt: null,
    };
    await store.workers.upsert(worker);
    await store.workers.upsert({ ...worker, id: 'w2', createdAt: 11 });
    await store.workers.upsert({
      ...worker,
      status: { state: 'running', error: '', message: '' },
      healthy: true,
      gpuUuids: ['GPU-1'],
      address: { host: '127.0.0.1', port: 32768 },
      updatedAt: 20,
      readyAt: 19,
    });
    const listed = await store.workers.listByEndpoint('e1');
    expect(listed.map((w) => w.id)).toEqual(['w1', 'w2']);
    expect(listed[0]).toMatchObject({
      status: { state: 'running' },
      healthy: true,
      gpuUuids: ['GPU-1'],
      address: { host: '127.0.0.1', port: 32768 },
      createdAt: 10,
      readyAt: 19,
    });
    await store.workers.delete('w1');
    expect(await store.workers.get('w1')).toBeUndefined();
  });

  it("keeps an owner's drain of a worker across the controller's writes, until the row goes", async () => {
    const worker = {
      id: 'w1',
      endpointId: 'e1',
      ownerId: 'owner-a',
      revision: 1,
      status: { state: 'running' as const, error: '', message: '' },
      healthy: true,
      gpuUuids: [],
      address: null,
      createdAt: 10,
      updatedAt: 10,
      readyAt: 10,
    };
    await store.workers.upsert(worker);
    await store.workers.upsert({ ...worker, id: 'w2' });
    expect(
      await store.workers.requestDrain('owner-b', 'w1', true, audit('worker.drain', 'w1')),
    ).toBeUndefined();
    expect(
      await store.workers.requestDrain('owner-a', 'nope', true, audit('worker.drain', 'nope')),
    ).toBeUndefined();
    expect(await store.workers.drainRequested()).toEqual(new Set());

    const drained = await store.workers.requestDrain('owner-a', 'w1', true, audit('worker.drain', 'w1'));
    expect(drained).toMatchObject({ id: 'w1', endpointId: 'e1', drainRequested: true });
    // The controller's next report of the worker leaves the owner's drain in place.
    await store.workers.upsert({
      ...worker,
      status: { state: 'draining', error: '', message: '' },
      updatedAt: 20,
    });
    expect(await store.workers.drainRequested()).toEqual(new Set(['w1']));
    expect((await store.workers.get('w1'))?.drainRequested).toBe(true);
    expect((await store.workers.get('w2'))?.drainRequested).toBe(false);
    expect((await store.audit.list('owner-a', 10)).map((e) => e.action)).toEqual(['worker.drain']);

    await store.workers.requestDrain('owner-a', 'w1', false, audit('worker.undrain', 'w1'));
    expect(await store.workers.drainRequested()).toEqual(new Set());
    await store.workers.requestDrain('owner-a', 'w1', true, audit('worker.drain', 'w1'));
    await store.workers.delete('w1');
    expect(await store.workers.drainRequested()).toEqual(new Set());
  });
});
