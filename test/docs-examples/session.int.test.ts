import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { commandBlocks } from './extract.js';
import { runPage } from './session.js';

/** The docs-examples runner's time limit on a block, on a real clock (so in the integration tier). */
describe('the docs-examples runner on a block that never ends', () => {
  const dir = mkdtempSync(join(tmpdir(), 'corral-docs-examples-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const PAGE = 'fixtures/endless.md';

  it('stops a block that runs too long', async () => {
    const [run] = await runPage(commandBlocks(PAGE, '```sh\nsleep 30\n```\n'), {
      dir,
      env: { PATH: process.env.PATH },
      substitute: (code) => code,
      timeoutMs: 300,
    });
    expect(run?.problems).toEqual(['still running after 0.3 s']);
  });
});
