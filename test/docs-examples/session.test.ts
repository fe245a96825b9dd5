import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { commandBlocks, commentOutputs } from './extract.js';
import { describeFailure, runPage } from './session.js';
import { jsonObjectsIn, matchShape } from './shapes.js';

const FIXTURE = fileURLToPath(new URL('fixtures/broken.md', import.meta.url));
const PAGE = 'fixtures/broken.md';

describe('the docs-examples runner on a page with a broken example', () => {
  const dir = mkdtempSync(join(tmpdir(), 'corral-docs-examples-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const blocks = commandBlocks(PAGE, readFileSync(FIXTURE, 'utf8'));

  it('finds the command blocks, the skipped ones with their reasons, and the outputs the page shows', () => {
    expect(blocks.map((b) => [b.line, b.language, b.skip !== undefined])).toEqual([
      [5, 'sh', false],
      [16, 'sh', false],
      [22, 'sh', false],
      [29, 'sh', true],
      [33, 'python', true],
      [39, 'console', false],
      [49, 'sh', false],
    ]);
    expect(blocks[3]?.skip).toBe('it would wipe the disk (of this machine)');
    expect(blocks[4]?.skip).toContain('runpod-python');
    expect(blocks[0]?.expected).toEqual([{ id: 'page-id-1234', name: 'thing' }]);
    expect(blocks[1]?.expected).toEqual([{ using: '...', name: '...' }]);
    expect(blocks[5]?.code).toBe(`echo '{"status": "ok"}'`);
  });

  it('runs the blocks in one session and reports the broken one by page, line, command and stderr', async () => {
    const runs = await runPage(blocks, {
      dir,
      env: { PATH: process.env.PATH },
      substitute: (code) => code,
      timeoutMs: 10_000,
    });
    expect(runs.map((run) => [run.block.line, run.problems.length === 0])).toEqual([
      [5, true],
      [16, true],
      [22, false],
      [39, false],
      [49, false],
    ]);
    // The variable of the first block and the id it printed in place of the page's reach the second.
    const printedId = (jsonObjectsIn(runs[0]?.stdout ?? '')[0] as { id: string }).id;
    expect(jsonObjectsIn(runs[1]?.stdout ?? '')).toEqual([{ using: printedId, name: 'thing' }]);
    const broken = describeFailure(runs[2] as (typeof runs)[number]);
    expect(broken).toContain('fixtures/broken.md:22 (sh): exited with 2');
    expect(broken).toContain('ls /no/such/place');
    expect(broken).toContain('No such file or directory');
    expect(runs[2]?.stdout).toBe('before\n');
    const drifted = describeFailure(runs[3] as (typeof runs)[number]);
    expect(drifted).toContain('fixtures/broken.md:39 (console): no output has the fields of');
    expect(drifted).toContain('the closest lacks ready');
    // Never run: it would change this machine.
    expect(runs[4]?.problems).toEqual([
      'changes this machine or reaches yours (apt-get): mark it <!-- docs-examples: skip (why) -->',
    ]);
    expect(runs[4]?.exitCode).toBeNull();
  });
});

describe('output shapes', () => {
  it('reads JSON printed back to back, and a comment output that spans lines', () => {
    expect(jsonObjectsIn('{"a":1}{"b":{"c":"}"}}\nnot json {oops}\n{"d":[1]}')).toEqual([
      { a: 1 },
      { b: { c: '}' } },
      { d: [1] },
    ]);
    expect(commentOutputs('curl x   # {"a": 1,\n#  "b": 2}\ncurl y # prose, {not json}')).toEqual([
      { a: 1, b: 2 },
    ]);
  });

  it('names the fields missing at any depth, and pairs the ids', () => {
    const shown = { id: 'page-1', endpoint: { workers: [{ id: 'w-1', state: 's' }] }, '...': 'more' };
    const printed = { id: 'run-1', endpoint: { workers: [{ id: 'w-9' }] }, extra: true };
    const match = matchShape(shown, printed);
    expect(match.missing).toEqual(['endpoint.workers[0].state']);
    // A map with no entries yet has the shape of one with some; a whole answer shown as `{}` has no fields.
    expect(matchShape({ byStatus: { '200': 3 } }, { byStatus: {} }).missing).toEqual([]);
    expect(matchShape({}, { code: 404 }).missing).toEqual(['no fields (it has code)']);
    expect([...match.ids]).toEqual([
      ['page-1', 'run-1'],
      ['w-1', 'w-9'],
    ]);
  });
});
