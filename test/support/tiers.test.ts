import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  INTEGRATION_ALONE,
  INTEGRATION_QUIET,
  POSTGRES_RERUN,
  SLOWEST_FIRST,
  TEST_ROOTS,
  tierOf,
  unitTierViolations,
} from './tiers.js';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

function testFiles(): string[] {
  return TEST_ROOTS.flatMap((root) =>
    readdirSync(join(ROOT, root), { recursive: true, encoding: 'utf8' })
      .filter((path) => path.endsWith('.test.ts') && !path.includes('node_modules'))
      .map((path) => `${root}/${path.replaceAll('\\', '/')}`),
  ).sort();
}

const read = (file: string) => readFileSync(join(ROOT, file), 'utf8');
/** A suite per store: `describe.each(storeTargets())`, or the targets mapped into a list of suites. */
const PER_STORE = /storeTargets\(\)\)\(|storeTargets\(\)\.map\(/;

describe('the test tiers', () => {
  const files = testFiles();
  const unit = files.filter((file) => tierOf(file) === 'unit');
  /** This file's own examples of what is refused are strings, not calls. */
  const checked = unit.filter((file) => file !== 'test/support/tiers.test.ts');

  it('puts files in their tier by name and place', () => {
    expect(tierOf('src/gateway/gateway.test.ts')).toBe('unit');
    expect(tierOf('src/gateway/proxy.int.test.ts')).toBe('integration');
    expect(tierOf('test/e2e/serve.test.ts')).toBe('integration');
    expect(tierOf('test/support/tiers.test.ts')).toBe('unit');
    expect(unit).toContain('src/controller/controller.test.ts');
    expect(files.filter((file) => tierOf(file) === 'integration')).toContain('test/e2e/dashboard.test.ts');
  });

  it('keeps real waits, Docker, PostgreSQL, Chromium and `corral serve` out of every unit-tier file', () => {
    const broken = checked.flatMap((file) =>
      unitTierViolations(read(file)).map((found) => `${file} ${found}`),
    );
    expect(broken, 'use ManualTimers or vi.useFakeTimers, or name the file *.int.test.ts').toEqual([]);
  });

  it('reruns on PostgreSQL exactly the unit-tier files that run a suite per store', () => {
    const perStore = unit.filter((file) => PER_STORE.test(read(file)));
    expect(perStore).toEqual([...POSTGRES_RERUN].sort());
  });

  it('runs alone or away from the heavier files only integration-tier files that exist, each in one list', () => {
    const integration = files.filter((file) => tierOf(file) === 'integration');
    const apart = [...INTEGRATION_ALONE, ...INTEGRATION_QUIET];
    expect(apart.filter((file) => !integration.includes(file))).toEqual([]);
    expect(new Set(apart).size).toBe(apart.length);
  });

  it('starts first only files that exist and run beside others (integration files not alone, or reruns on PostgreSQL)', () => {
    const sideBySide = [
      ...files.filter((file) => tierOf(file) === 'integration' && !INTEGRATION_ALONE.includes(file)),
      ...POSTGRES_RERUN,
    ];
    expect(SLOWEST_FIRST.filter((file) => !sideBySide.includes(file))).toEqual([]);
  });
});

describe('unitTierViolations', () => {
  it.each([
    [
      'await vi.waitFor(() => expect(x).toBe(1));',
      ['line 1: vi.waitFor / vi.waitUntil (polls on real time)'],
    ],
    [
      "import { setTimeout as sleep } from 'node:timers/promises';",
      ['line 1: a sleep from node:timers/promises'],
    ],
    [
      'await new Promise((resolve) => setTimeout(resolve, 50));',
      ['line 1: a call of the real setTimeout or setInterval'],
    ],
    ['const id = setInterval(tick, 10);', ['line 1: a call of the real setTimeout or setInterval']],
    ['if (dockerAvailable()) run();', ['line 1: Docker (dockerAvailable, the test image)']],
    ['server = await startServe({});', ['line 1: a real `corral serve` (startServe)']],
    ['const url = process.env.CORRAL_TEST_DATABASE_URL;', ['line 1: PostgreSQL by its URL']],
    ['const browser = await launchChromium();', ['line 1: Chromium']],
  ])('finds %s', (text, expected) => {
    expect(unitTierViolations(`// a test\n${text}`)).toEqual(
      expected.map((line) => line.replace('line 1', 'line 2')),
    );
  });

  it.each([
    ['manual timers', 'timers.setTimeout(callback, 100);\nh.timers.advance(100);'],
    ['a Timers class declaring its method', '  setTimeout(callback: () => void, ms: number): unknown {'],
    ['an options object naming timers', 'timers: { setTimeout: () => undefined, clearTimeout: () => {} },'],
    ['fake timers', 'vi.useFakeTimers();\nsetTimeout(done, 1_000);\nvi.advanceTimersByTime(1_000);'],
    ['a turn of the event loop', 'await new Promise((resolve) => setImmediate(resolve));'],
  ])('allows %s', (_name, text) => {
    expect(unitTierViolations(text)).toEqual([]);
  });
});
