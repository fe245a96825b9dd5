import { describe, expect, it } from 'vitest';
import { modelsToEvict } from './eviction.js';

const model = (name: string, diskBytes: number, lastUsedAt: number) => ({ name, diskBytes, lastUsedAt });

describe('the eviction of cached models', () => {
  const models = [
    model('a/old', 40, 1),
    model('b/named', 40, 0),
    model('c/recent', 40, 3),
    model('d/mid', 40, 2),
  ];

  it('removes the least recently used models no endpoint names until the cache fits its budget', () => {
    const evicted = modelsToEvict(models, 90, (name) => name === 'b/named');
    expect(evicted.map((m) => m.name)).toEqual(['a/old', 'd/mid']);
  });

  it('removes nothing within the budget, and never a named model even over it', () => {
    expect(modelsToEvict(models, 160, () => false)).toEqual([]);
    expect(modelsToEvict(models, 0, () => true)).toEqual([]);
  });
});
