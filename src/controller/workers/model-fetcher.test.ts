/**
 * The fetcher of an endpoint's models (model-fetcher.ts) over an in-memory cache: a model removed from the cache
 * after it was ready (evicted, or `DELETE models`) is fetched again for the next worker, not taken as still here.
 */
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { MemoryModelCache } from '../../../test/support/memory-model-cache.js';
import { ModelFetcher } from './model-fetcher.js';

const TINY = { name: 'acme/tiny', revision: 'main', allowPatterns: [], tokenSecret: null };

async function settled(): Promise<void> {
  for (let turn = 0; turn < 10; turn++) await Promise.resolve();
}

describe('ModelFetcher', () => {
  it('fetches a model again once the cache has removed it, and the workers wait for it again', async () => {
    const cache = new MemoryModelCache({ hubDir: '/cache/hub', models: [{ name: 'acme/tiny', bytes: 1e9 }] });
    const changes: string[] = [];
    const fetcher = new ModelFetcher({
      cache,
      token: async () => null,
      clock: () => 0,
      logger: pino({ level: 'silent' }),
      onChange: (ownerId) => changes.push(ownerId),
    });
    expect(fetcher.need('owner-a', [TINY]).ready).toBe(false);
    await settled();
    cache.finish(TINY);
    await settled();
    expect(fetcher.need('owner-a', [TINY])).toEqual({ ready: true });

    expect(await cache.remove('acme/tiny')).toBe('removed');
    const again = fetcher.need('owner-a', [TINY]);
    expect(again).toMatchObject({ ready: false, failed: false });
    await settled();
    expect(cache.downloading(TINY)).toBe(true);
    cache.finish(TINY);
    await settled();
    expect(fetcher.need('owner-a', [TINY])).toEqual({ ready: true });
  });
});
