import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import { GpuCheckpointDeadlineError } from '../../errors/gpu-checkpoint-catalogue.js';
import { runHelper } from './run-helper.js';

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('the deadline of a driver call, in real time', () => {
  it('kills a helper that never answers, and its children, and rejects at the deadline', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-helper-'));
    // A helper that starts a child of its own (as a shell wrapper would), writes both pids, and never answers.
    const script = [
      "const { spawn } = require('node:child_process');",
      "const child = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });",
      `require('node:fs').writeFileSync(${JSON.stringify(join(dir, 'pids'))}, process.pid + ' ' + child.pid);`,
      'setInterval(() => {}, 1000);',
    ].join('\n');
    const started = Date.now();
    const error = await runHelper(
      { command: process.execPath, args: ['-e', script] },
      'lock',
      ['1', '100'],
      1_500,
    ).catch((e: unknown) => e);
    const took = Date.now() - started;
    expect(error).toBeInstanceOf(GpuCheckpointDeadlineError);
    expect(took).toBeGreaterThanOrEqual(1_400);
    expect(took).toBeLessThan(10_000);
    const pids = readFileSync(join(dir, 'pids'), 'utf8').split(' ').map(Number);
    expect(pids).toHaveLength(2);
    await vi.waitFor(() => expect(pids.filter(alive)).toEqual([]), { timeout: 10_000, interval: 50 });
  });
});
