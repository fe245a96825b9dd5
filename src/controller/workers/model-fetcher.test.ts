/**
 * The fetcher of an endpoint's models (model-fetcher.ts) over an in-memory cache: a model removed from the cache
 * after it was ready (evicted, or `DELETE models`) is fetched again for the next worker, not taken as still here;
 * a ready model a machine lacks (a GPU node that joined later) is fetched again there, the workers not waiting.
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

  it('fetches a ready model again only where a machine lacks it, at most once a minute, while the workers go on', async () => {
    const cache = new MemoryModelCache({ hubDir: '/cache/hub', models: [{ name: 'acme/tiny', bytes: 1e9 }] });
    let lacking = false;
    let ensures = 0;
    const fills: string[] = [];
    let now = 0;
    const fetcher = new ModelFetcher({
      cache: {
        ensure: (model, token, onProgress) => {
          ensures++;
          return cache.ensure(model, token, onProgress);
        },
        onRemoved: (listener) => cache.onRemoved(listener),
        lacking: () => lacking,
        fillLacking: async (model) => {
          fills.push(model.name);
          return ['gpu-c'];
        },
      },
      token: async () => null,
      clock: () => now,
      logger: pino({ level: 'silent' }),
      onChange: () => {},
    });
    fetcher.need('owner-a', [TINY]);
    await settled();
    cache.finish(TINY);
    await settled();
    expect(fetcher.need('owner-a', [TINY])).toEqual({ ready: true });
    expect(ensures).toBe(1);

    lacking = true; // a GPU node joined without the model
    expect(fetcher.need('owner-a', [TINY])).toEqual({ ready: true });
    await settled();
    expect(fills).toEqual(['acme/tiny']);
    now += 30_000;
    expect(fetcher.need('owner-a', [TINY])).toEqual({ ready: true });
    await settled();
    expect(fills).toHaveLength(1);
    now += 30_000;
    fetcher.need('owner-a', [TINY]);
    await settled();
    expect(fills).toHaveLength(2);
    lacking = false;
    now += 60_000;
    fetcher.need('owner-a', [TINY]);
    await settled();
    expect(fills).toHaveLength(2);
    // The machines that hold it are not asked again: no ensure beyond the first fetch.
    expect(ensures).toBe(1);
  });
});
