/**
 * The repository's source files for the house-rule tests (headers, private members): every `.ts`, `.tsx` and
 * `.mjs` file under the product, its dashboard, its benchmarks and the tests' support, as paths from the root.
 */
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPOSITORY_ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SOURCE_DIRS = ['src', 'web', 'bench', 'test'];
const SOURCE_FILE = /\.(ts|tsx|mjs)$/;
const TEST_FILE = /\.test\.ts$/;

/** Sorted; test files (`*.test.ts`) only when `withTests`. */
export function sourceFiles(options: { withTests: boolean }): string[] {
  return SOURCE_DIRS.flatMap((dir) =>
    readdirSync(join(REPOSITORY_ROOT, dir), { recursive: true, encoding: 'utf8' })
      .filter((path) => SOURCE_FILE.test(path) && (options.withTests || !TEST_FILE.test(path)))
      .map((path) => `${dir}/${path.replaceAll('\\', '/')}`),
  ).sort();
}
