import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from './json-depth.js';

const nested = (depth: number) => `${'['.repeat(depth)}${']'.repeat(depth)}`;

describe('nestsDeeperThan', () => {
  it('counts arrays and objects opened inside one another, up to the limit and one past it', () => {
    expect(nestsDeeperThan(nested(128), 128)).toBe(false);
    expect(nestsDeeperThan(nested(129), 128)).toBe(true);
    expect(nestsDeeperThan(`${'{"a":'.repeat(129)}1${'}'.repeat(129)}`, 128)).toBe(true);
    // Siblings do not add up: depth, not count.
    expect(nestsDeeperThan(`[${Array(1000).fill('[[]]').join(',')}]`, 3)).toBe(false);
  });

  it('does not count brackets inside strings, escaped quotes included', () => {
    expect(nestsDeeperThan(JSON.stringify({ text: '['.repeat(500) }), 2)).toBe(false);
    expect(nestsDeeperThan(JSON.stringify({ text: `\\"${'{'.repeat(50)}"` }), 2)).toBe(false);
  });

  it('scans 100,000 levels without recursion (JSON.stringify of the same overflows its stack)', () => {
    const text = nested(100_000);
    expect(nestsDeeperThan(text, 128)).toBe(true);
    expect(() => JSON.stringify(JSON.parse(text))).toThrow(RangeError);
  });
});
