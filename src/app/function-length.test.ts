/**
 * Keeps the composition root readable (issue 31): no function, method or arrow in a non-test file of `src/app/` is
 * longer than 80 lines; a builder that grows past it splits where its parts split.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const APP = fileURLToPath(new URL('.', import.meta.url));
const MAX_LINES = 80;

/** Each function-like node over `max` lines in `text`, as `file:line name (n lines)`. */
function longFunctions(file: string, text: string, max: number): string[] {
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) && 'body' in node && node.body) {
      const first = source.getLineAndCharacterOfPosition(node.getStart(source)).line;
      const last = source.getLineAndCharacterOfPosition(node.getEnd()).line;
      const lines = last - first + 1;
      if (lines > max) {
        const name = node.name && ts.isIdentifier(node.name) ? node.name.text : '(anonymous)';
        found.push(`${file}:${first + 1} ${name} (${lines} lines)`);
      }
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('src/app functions', () => {
  it('finds a function over the limit, and one at it passes', () => {
    const body = (n: number) => `function f() {\n${'  x();\n'.repeat(n - 2)}}\n`;
    expect(longFunctions('a.ts', body(3), 3)).toEqual([]);
    expect(longFunctions('a.ts', `const g = () => 1;\n${body(4)}`, 3)).toEqual(['a.ts:2 f (4 lines)']);
  });

  it(`has none over ${MAX_LINES} lines outside the tests`, () => {
    const files = readdirSync(APP).filter((name) => name.endsWith('.ts') && !name.endsWith('.test.ts'));
    const long = files.flatMap((name) =>
      longFunctions(`src/app/${name}`, readFileSync(join(APP, name), 'utf8'), MAX_LINES),
    );
    expect(long).toEqual([]);
  });
});
