/** Keeps the house rule that every non-test source file opens with a comment saying what it owns. */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
/** The product, its dashboard, its benchmarks, and the tests' shared support and fixtures. */
const SOURCE_DIRS = ['src', 'web', 'bench', 'test'];
const SOURCE_FILE = /\.(ts|tsx|mjs)$/;
/** A test file says what it tests through its describe and it names instead. */
const TEST_FILE = /\.test\.ts$/;

function sourceFiles(): string[] {
  return SOURCE_DIRS.flatMap((dir) =>
    readdirSync(join(ROOT, dir), { recursive: true, encoding: 'utf8' })
      .filter((path) => SOURCE_FILE.test(path) && !TEST_FILE.test(path))
      .map((path) => `${dir}/${path.replaceAll('\\', '/')}`),
  ).sort();
}

/** The first non-blank line is a JSDoc block or a line comment, so it comes before the imports. */
function opensWithComment(text: string): boolean {
  const first = text.split('\n').find((line) => line.trim() !== '');
  return first !== undefined && /^(\/\*\*|\/\/)/.test(first.trimStart());
}

describe('file headers', () => {
  const files = sourceFiles();

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
