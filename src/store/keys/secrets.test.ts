import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { deleteEndpoint, sampleEndpoint } from '../../../test/support/fixtures.js';
import { storeTargets } from '../../../test/support/stores.js';
import type { AuditEntry } from '../audit.js';
import type { Store } from '../store.js';

const audit = (ownerId: string, action: string, targetId: string): AuditEntry => ({
  at: 1,
  ownerId,
  actor: 'test',
  action,
  targetId,
});

describe.each(storeTargets())('secrets on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
  });
  afterEach(async () => {
    await dispose();
  });

  const put = (ownerId: string, name: string, value: string, at: number) =>
    store.secrets.put(
      { ownerId, name, encryptedValue: value, createdAt: at, updatedAt: at },
      audit(ownerId, 'secret.save', name),
    );

  it("keeps each owner's secrets apart, lists names and times only, and replaces a value in place", async () => {
    expect(await put('owner-a', 'hf', 'sealed-1', 10)).toBe(false);
    expect(await put('owner-b', 'hf', 'sealed-b', 11)).toBe(false);
    expect(await put('owner-a', 'db', 'sealed-2', 12)).toBe(false);
    expect(await put('owner-a', 'hf', 'sealed-3', 20)).toBe(true);
    expect(await store.secrets.list('owner-a')).toEqual([
      { ownerId: 'owner-a', name: 'db', createdAt: 12, updatedAt: 12 },
      { ownerId: 'owner-a', name: 'hf', createdAt: 10, updatedAt: 20 },
    ]);
    expect(await store.secrets.sealed('owner-a', ['hf', 'missing'])).toEqual(new Map([['hf', 'sealed-3']]));
    expect(await store.secrets.sealed('owner-b', ['hf', 'db'])).toEqual(new Map([['hf', 'sealed-b']]));
    expect(await store.secrets.names('owner-c')).toEqual(new Set());
    expect(await store.secrets.delete('owner-c', 'hf', audit('owner-c', 'secret.delete', 'hf'))).toBe(false);
    expect(await store.secrets.delete('owner-a', 'hf', audit('owner-a', 'secret.delete', 'hf'))).toBe(true);
    expect(await store.secrets.names('owner-a')).toEqual(new Set(['db']));
    expect(await store.secrets.names('owner-b')).toEqual(new Set(['hf']));
    const actions = (await store.audit.list('owner-a', 100)).map((e) => e.action);
    expect(actions.filter((a) => a.startsWith('secret.'))).toHaveLength(4);
  });

  it("finds the owner's live endpoints whose env references a secret, and only those", async () => {
    const env = (value: string) => ({ patch: { env: [{ key: 'TOKEN', value }] } });
    const uses = sampleEndpoint(env('Bearer {{ CORRAL_SECRET_hf }}'));
    const similar = sampleEndpoint(env('{{ CORRAL_SECRET_hf2 }} CORRAL_SECRET_hf'));
    const theirs = sampleEndpoint({ ownerId: 'owner-b', ...env('{{CORRAL_SECRET_hf}}') });
    const deleted = sampleEndpoint(env('{{CORRAL_SECRET_hf}}'));
    for (const e of [uses, similar, theirs, deleted]) {
      await store.endpoints.create(e, [], audit(e.ownerId, 'create', e.id));
    }
    await deleteEndpoint(store, deleted);
    expect(await store.endpoints.idsUsingSecret('owner-a', 'hf')).toEqual([uses.id]);
    expect(await store.endpoints.idsUsingSecret('owner-b', 'hf')).toEqual([theirs.id]);
    expect(await store.endpoints.idsUsingSecret('owner-a', 'db')).toEqual([]);
  });
});
