import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { nestsDeeperThan } from './json-depth.js';

/** The rule read a character at a time, as first written: the skip over strings must agree with it everywhere. */
function deeperOneByOne(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      depth++;
      if (depth > max) return true;
    } else if (c === '}' || c === ']') depth--;
  }
  return false;
}

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

  it('agrees with a scan one character at a time on any text of brackets, quotes and backslashes', () => {
    const text = fc.string({ unit: fc.constantFrom('[', ']', '{', '}', '"', '\\', 'a', ','), maxLength: 60 });
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 6 }), (t, max) => {
        expect(nestsDeeperThan(t, max)).toBe(deeperOneByOne(t, max));
      }),
      { numRuns: 5_000 },
    );
  });

  it('agrees with it on JSON values, their strings full of escapes', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.integer({ min: 0, max: 8 }), (value, max) => {
        const t = JSON.stringify(value);
        expect(nestsDeeperThan(t, max)).toBe(deeperOneByOne(t, max));
      }),
      { numRuns: 2_000 },
    );
  });
});
