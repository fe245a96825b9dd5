/** The keys `corral serve` makes sure of at start, with replicas of one installation starting together. */
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type StoreTarget, storeTargets } from '../../test/support/stores.js';
import type { Store } from '../store/store.js';
import { ensureKeys } from './first-key.js';

const OPERATOR_KEY = 'op-0123456789abcdef0123456789abcdef';

describe.each(storeTargets())('ensureKeys on $name', (target: StoreTarget) => {
  let opened: Awaited<ReturnType<StoreTarget['open']>>;
  beforeEach(async () => {
    opened = await target.open();
  });
  afterEach(async () => {
    await opened.dispose();
  });

  const start = (store: Store, printed: string[]) =>
    ensureKeys(store, {
      logger: pino({ level: 'silent' }),
      stdout: (text) => printed.push(text),
      operatorKey: OPERATOR_KEY,
      apiUrl: undefined,
    });

  it('three replicas storing CORRAL_API_KEY at once all start, and the key is stored once', async () => {
    const printed: string[] = [];
    const replicas = [opened.store, opened.sibling(), opened.sibling()];
    const outcomes = await Promise.allSettled(replicas.map((store) => start(store, printed)));
    expect(outcomes.map((o) => (o.status === 'rejected' ? String(o.reason) : 'started'))).toEqual([
      'started',
      'started',
      'started',
    ]);
    const keys = await opened.store.apiKeys.list();
    expect(keys.map((k) => [k.name, k.admin])).toEqual([['CORRAL_API_KEY', true]]);
    // The operator's key is there: no first key is made, nor printed.
    expect(printed).toEqual([]);
  });
});
