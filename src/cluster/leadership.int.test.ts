/**
 * Leadership on each store: SQLite always leads (it seizes the lease, one process holds the database); PostgreSQL
 * elects, runs a fenced term, and releases the lease at the end.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { storeTargets } from '../../test/support/stores.js';
import type { Store } from '../store/store.js';
import type { TermFence } from './elector.js';
import { type ControllerTerms, leadershipOf } from './leadership.js';

const quiet = { info: () => undefined, warn: () => undefined };

describe.each(storeTargets())('leadership on $name', (target) => {
  let store: Store;
  let dispose: () => Promise<void>;
  const calls: string[] = [];
  let fence: TermFence | undefined;
  const terms: ControllerTerms = {
    start: () => {
      calls.push('start');
    },
    lead: async (given) => {
      fence = given;
      calls.push('lead');
    },
    stepDown: async () => {
      calls.push('stepDown');
    },
  };

  beforeEach(async () => {
    ({ store, dispose } = await target.open());
    calls.length = 0;
    fence = undefined;
  });
  afterEach(async () => {
    await dispose();
  });

  it('leads, under the lease, from begin to end, and releases the lease at the end', async () => {
    const leadership = leadershipOf({ store, terms, replicaId: 'rep-a', logger: quiet });
    expect(leadership.leading()).toBe(false);
    await leadership.begin();
    for (let waited = 0; !leadership.leading() && waited < 3_000; waited += 20) await sleep(20);
    expect(leadership.leading()).toBe(true);
    const lease = await store.leases.read('controller');
    expect(lease?.holder).toBe('rep-a');
    if (target.name === 'sqlite') {
      // One process: no election, no fence; the controller runs unfenced, as it always has.
      expect(calls).toEqual(['start']);
    } else {
      expect(calls).toEqual(['lead']);
      expect(fence?.claim()).toEqual({ name: 'controller', holder: 'rep-a', token: lease?.token });
    }
    await leadership.end();
    expect(calls).toEqual(target.name === 'sqlite' ? ['start'] : ['lead', 'stepDown']);
    const after = await store.leases.read('controller');
    expect(after && after.expiresAt <= after.now).toBe(true);
    // The next process takes it at once, under the next token.
    expect(await store.leases.tryAcquire('controller', 'rep-b', 60_000)).toMatchObject({
      token: (lease?.token ?? 0) + 1,
    });
  });

  it.runIf(target.name === 'sqlite')('on SQLite seizes a lease a killed process left unexpired', async () => {
    await store.leases.seize('controller', 'rep-killed');
    const leadership = leadershipOf({ store, terms, replicaId: 'rep-new', logger: quiet });
    await leadership.begin();
    expect(leadership.leading()).toBe(true);
    expect(await store.leases.read('controller')).toMatchObject({ holder: 'rep-new', token: 2 });
    await leadership.end();
  });
});
