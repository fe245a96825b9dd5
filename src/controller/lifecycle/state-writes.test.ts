import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const CONTROLLER = join(dirname(fileURLToPath(import.meta.url)), '..');
/** The one file that may assign a worker's state: every change goes through its table. */
const ALLOWED = 'lifecycle/worker-lifecycle.ts';
/** An assignment to a `state` property (not a comparison): `record.state = ...`, `w['state'] = ...`. */
const STATE_WRITE = /(\.state|\[['"]state['"]\])\s*=(?!=)/;

/** Lines of the controller's non-test sources that assign a state, as `file:line: text`. */
function stateWrites(files: { path: string; text: string }[]): string[] {
  return files.flatMap(({ path, text }) =>
    text
      .split('\n')
      .map((line, i) => [line, i + 1] as const)
      .filter(([line]) => STATE_WRITE.test(line) && !line.trimStart().startsWith('*'))
      .map(([line, n]) => `${path}:${n}: ${line.trim()}`),
  );
}

function controllerSources(): { path: string; text: string }[] {
  return readdirSync(CONTROLLER, { recursive: true, encoding: 'utf8' })
    .map((path) => path.replaceAll('\\', '/'))
    .filter((path) => path.endsWith('.ts') && !path.endsWith('.test.ts') && path !== ALLOWED)
    .map((path) => ({ path, text: readFileSync(join(CONTROLLER, path), 'utf8') }));
}

describe('worker state changes', () => {
  it('finds a state written outside the lifecycle', () => {
    const text = "if (a.state === 'x') return;\nrecord.state = 'running';\nw['state'] = s;";
    expect(stateWrites([{ path: 'x.ts', text }])).toEqual([
      "x.ts:2: record.state = 'running';",
      "x.ts:3: w['state'] = s;",
    ]);
  });

  it('are made only by the worker lifecycle (lifecycle/worker-lifecycle.ts), through its table', () => {
    const sources = controllerSources();
    expect(sources.some((s) => s.path === 'controller.ts')).toBe(true);
    expect(stateWrites(sources)).toEqual([]);
  });
});
