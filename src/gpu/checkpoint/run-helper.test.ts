import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../../test/support/manual-timers.js';
import {
  GpuCheckpointDeadlineError,
  GpuCheckpointHelperError,
} from '../../errors/gpu-checkpoint-catalogue.js';
import { helperEnv, runHelper } from './run-helper.js';

/** A helper that is a real Node process running `script` (its argv: the op and the params after it). */
const nodeHelper = (script: string) => ({ command: process.execPath, args: ['-e', script] });

describe('running the helper', () => {
  it("resolves with the helper's answer, the op and params on its command line", async () => {
    const helper = nodeHelper(
      'console.log(JSON.stringify({ ok: true, op: process.argv[1], steps: [], state: Number(process.argv[2]) }))',
    );
    await expect(runHelper(helper, 'state', ['2'], 60_000, new ManualTimers())).resolves.toEqual({
      ok: true,
      op: 'state',
      steps: [],
      state: 2,
    });
  });

  it('rejects with a deadline error when the helper never answers, and the deadline is what ends it', async () => {
    const timers = new ManualTimers();
    // Blocks in one call that never returns, as a driver call on a stopped process did.
    const helper = nodeHelper('Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)');
    const outcome = runHelper(helper, 'suspend', ['4242', '500'], 1_000, timers).then(
      () => 'answered',
      (error: unknown) => error,
    );
    timers.advance(999);
    expect(timers.count).toBe(1);
    timers.advance(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(GpuCheckpointDeadlineError);
    expect(error).toMatchObject({
      code: 'GPU_CHECKPOINT_DEADLINE',
      message: 'the driver call (suspend) did not return within 1000 ms',
      metadata: { op: 'suspend', params: ['4242', '500'], deadlineMs: 1_000 },
    });
  });

  it('rejects with a helper error when it exits without an answer, with the end of its stderr', async () => {
    const helper = nodeHelper('console.error("Segmentation fault"); process.exit(139)');
    const error = await runHelper(helper, 'restore', ['1'], 60_000, new ManualTimers()).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GpuCheckpointHelperError);
    expect(error).toMatchObject({
      message: 'the checkpoint helper (restore) exited without an answer (exit 139)',
      metadata: { stderr: 'Segmentation fault' },
    });
  });

  it('rejects with a helper error when it cannot start', async () => {
    const helper = { command: '/nonexistent/corral-cuda-helper', args: [] };
    const error = await runHelper(helper, 'state', ['1'], 60_000, new ManualTimers()).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(GpuCheckpointHelperError);
    expect((error as Error).message).toMatch(/^the checkpoint helper could not start: .*ENOENT/);
  });

  it("gives the helper the program and library paths of Corral's environment and its own extras, nothing else", async () => {
    expect(
      helperEnv(
        { PATH: '/usr/bin', LD_LIBRARY_PATH: '/opt/nvidia', CORRAL_API_KEY: 'secret', HOME: '/root' },
        { X: '1' },
      ),
    ).toEqual({ PATH: '/usr/bin', LD_LIBRARY_PATH: '/opt/nvidia', X: '1' });
    const helper = {
      ...nodeHelper(
        'console.log(JSON.stringify({ ok: true, op: "state", steps: [], missing: Object.keys(process.env) }))',
      ),
      env: { CORRAL_LIBCUDA: 'libc.so.6' },
    };
    const answer = await runHelper(helper, 'state', ['1'], 60_000, new ManualTimers());
    expect(answer.ok && answer.missing?.filter((key) => key !== 'PATH' && key !== 'LD_LIBRARY_PATH')).toEqual(
      ['CORRAL_LIBCUDA'],
    );
  });
});
