import { describe, expect, it } from 'vitest';
import { type KeptOutputEntry, outputsToDrop } from './output-retention.js';

const failed = (workerId: string, endedAt: number): KeptOutputEntry => ({ workerId, endedAt, failed: true });
const removed = (workerId: string, endedAt: number): KeptOutputEntry => ({
  workerId,
  endedAt,
  failed: false,
});

describe('outputsToDrop', () => {
  it('keeps everything within both counts', () => {
    expect(outputsToDrop([failed('a', 1), removed('b', 2)], { failed: 3, other: 1 })).toEqual([]);
    expect(outputsToDrop([], { failed: 3, other: 3 })).toEqual([]);
  });

  it('drops the oldest failed workers beyond the count, whatever the input order', () => {
    const kept = [failed('f2', 20), failed('f4', 40), failed('f1', 10), failed('f3', 30)];
    expect(outputsToDrop(kept, { failed: 3, other: 3 })).toEqual(['f1']);
    expect(outputsToDrop(kept, { failed: 1, other: 3 }).sort()).toEqual(['f1', 'f2', 'f3']);
  });

  it('never lets scaled-down workers push out the three most recent failed ones', () => {
    const kept = [
      failed('f1', 1),
      failed('f2', 2),
      failed('f3', 3),
      ...Array.from({ length: 20 }, (_, i) => removed(`r${i}`, 100 + i)),
    ];
    const drop = outputsToDrop(kept, { failed: 3, other: 5 });
    expect(drop).not.toContain('f1');
    expect(drop.sort()).toEqual(Array.from({ length: 15 }, (_, i) => `r${i}`).sort());
  });

  it('counts a later worker id as newer when two ended at the same time', () => {
    expect(outputsToDrop([failed('w-a', 5), failed('w-b', 5)], { failed: 1, other: 0 })).toEqual(['w-a']);
    expect(outputsToDrop([failed('w-b', 5), failed('w-a', 5)], { failed: 1, other: 0 })).toEqual(['w-a']);
  });

  it('keeps none of a kind whose count is 0', () => {
    expect(outputsToDrop([removed('r', 1), failed('f', 2)], { failed: 3, other: 0 })).toEqual(['r']);
  });
});
