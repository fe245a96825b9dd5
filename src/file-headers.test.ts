/** Keeps the house rule that every non-test source file opens with a comment saying what it owns. */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPOSITORY_ROOT as ROOT, sourceFiles } from '../test/support/source-files.js';

/** The first non-blank line is a JSDoc block or a line comment, so it comes before the imports. */
function opensWithComment(text: string): boolean {
  const first = text.split('\n').find((line) => line.trim() !== '');
  return first !== undefined && /^(\/\*\*|\/\/)/.test(first.trimStart());
}

describe('file headers', () => {
  const files = sourceFiles({ withTests: false });

  it('finds the source files', () => {
    expect(files).toContain('src/main.ts');
    expect(files).toContain('bench/run.ts');
    expect(files).toContain('test/support/api.ts');
    expect(files).toContain('web/src/main.tsx');
    expect(files.some((file) => file.endsWith('.test.ts'))).toBe(false);
  });

  it('opens every non-test source file with a comment saying what it owns', () => {
    const missing = files.filter((file) => !opensWithComment(readFileSync(join(ROOT, file), 'utf8')));
    expect(missing, 'these files need a header comment (/** ... */ or //) before their imports').toEqual([]);
  });
});
