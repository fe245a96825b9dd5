import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../test/support/fixtures.js';
import { cachedEndpoints } from './endpoint-cache.js';

describe("the worker routes' endpoint lookup", () => {
  it('asks the store once per endpoint within the ttl, and again after it', async () => {
    let now = 0;
    const asked: string[] = [];
    const endpoint = sampleEndpoint();
    const find = cachedEndpoints(
      async (id) => {
        asked.push(id);
        return id === endpoint.id ? endpoint : undefined;
      },
      { clock: () => now, ttlMs: 1_000 },
    );
    expect(await find(endpoint.id)).toBe(endpoint);
    expect(await find(endpoint.id)).toBe(endpoint);
    expect(await find('gone')).toBeUndefined();
    expect(await find('gone')).toBeUndefined();
    now = 1_000;
    await find(endpoint.id);
    expect(asked).toEqual([endpoint.id, 'gone', endpoint.id]);
  });
});
