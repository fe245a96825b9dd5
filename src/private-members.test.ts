/** Keeps the house rule of one private-member style: `#name`, never TypeScript's `private` keyword. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT as ROOT, sourceFiles } from '../test/support/source-files.js';

/**
 * A member or a constructor's parameter property declared with the keyword, at the start of its line. A private
 * constructor (a factory's class) has no `#` form and is left to the keyword.
 */
const PRIVATE_KEYWORD =
  /^\s*(?:constructor\()?\s*private\s+(?:readonly\s+|async\s+|static\s+)*(?!constructor\b)[\w$]+/m;

describe('private members', () => {
  it('the pattern finds the keyword, and not the word in a string or a comment', () => {
    expect(PRIVATE_KEYWORD.test('  private done = 0;')).toBe(true);
    expect(PRIVATE_KEYWORD.test('  constructor(private readonly options: Options) {}')).toBe(true);
    expect(PRIVATE_KEYWORD.test('  private async call(path: string) {')).toBe(true);
    expect(PRIVATE_KEYWORD.test("  message: 'a private one the token given cannot read',")).toBe(false);
    expect(PRIVATE_KEYWORD.test('  #done = 0;')).toBe(false);
    expect(PRIVATE_KEYWORD.test('  private constructor(dir: string) {')).toBe(false);
  });

  it('no source file declares one with the `private` keyword', () => {
    const offenders = sourceFiles({ withTests: true }).filter((file) =>
      PRIVATE_KEYWORD.test(readFileSync(join(ROOT, file), 'utf8')),
    );
    expect(offenders, 'write these members as #name').toEqual([]);
  });
});
