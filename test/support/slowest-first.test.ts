import { describe, expect, it } from 'vitest';
import { slowestFirst } from './slowest-first.js';

describe('slowestFirst', () => {
  it('starts the listed files first, slowest first, and keeps the order of the others', () => {
    const files = ['a.ts', 'slow-2.ts', 'b.ts', 'slow-1.ts', 'c.ts'];
    expect(slowestFirst(files, (f) => f, ['slow-1.ts', 'slow-2.ts', 'gone.ts'])).toEqual([
      'slow-1.ts',
      'slow-2.ts',
      'a.ts',
      'b.ts',
      'c.ts',
    ]);
  });

  it('leaves the order as it is when no listed file runs', () => {
    expect(slowestFirst(['b.ts', 'a.ts'], (f) => f, ['slow.ts'])).toEqual(['b.ts', 'a.ts']);
  });
});
