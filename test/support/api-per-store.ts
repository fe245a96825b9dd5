/**
 * The API over a fresh store for each test of a per-store suite (`describe.each(storeTargets())`): opened before
 * each test and closed after it; the returned function gives the current one.
 */
import { afterEach, beforeEach } from 'vitest';
import { createTestApi, type TestApi } from './api.js';
import type { StoreTarget } from './stores.js';

export function apiPerTest(target: StoreTarget): () => TestApi {
  let api: TestApi | undefined;
  let dispose: (() => Promise<void>) | undefined;
  beforeEach(async () => {
    const opened = await target.open();
    dispose = opened.dispose;
    api = await createTestApi(opened.store);
  });
  afterEach(async () => {
    await api?.app.close();
    await dispose?.();
  });
  return () => {
    if (!api) throw new Error('the API is opened before each test');
    return api;
  };
}
