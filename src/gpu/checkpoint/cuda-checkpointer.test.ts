import { chmodSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../../test/support/manual-timers.js';
import {
  GpuCheckpointDeadlineError,
  GpuCheckpointUnavailableError,
} from '../../errors/gpu-checkpoint-catalogue.js';
import { CudaCheckpointer, lockTimeoutMs } from './cuda-checkpointer.js';
import { defaultHelperCommand } from './run-helper.js';

const logger = pino({ level: 'silent' });
const available = { available: true as const, driverVersion: '13.0' };

describe('the CUDA checkpointer', () => {
  it('refuses every driver call where the tier is unavailable, with the reason', async () => {
    const checkpointer = new CudaCheckpointer({
      availability: { available: false, reason: 'GPUs are simulated' },
      helper: defaultHelperCommand(),
      logger,
    });
    for (const call of [
      checkpointer.suspend(1, { deadlineMs: 1_000 }),
      checkpointer.resume(1, { deadlineMs: 1_000 }),
      checkpointer.state(1, { deadlineMs: 1_000 }),
    ]) {
      await expect(call).rejects.toThrow(new GpuCheckpointUnavailableError('GPUs are simulated'));
    }
  });

  it('answers the real helper\'s "libcuda not found" as unavailable (this machine has no driver)', async () => {
    const checkpointer = new CudaCheckpointer({
      availability: available,
      helper: defaultHelperCommand(),
      logger,
    });
    const error = await checkpointer.suspend(process.pid, { deadlineMs: 30_000 }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GpuCheckpointUnavailableError);
    expect((error as Error).message).toMatch(/^libcuda not found/);
    checkpointer.close();
  });

  it('rejects at the deadline when the helper hangs (as a call on a stopped process does)', async () => {
    const timers = new ManualTimers();
    // Blocks in one call that never returns, as a driver call on a stopped process did.
    const hanging = {
      command: process.execPath,
      args: ['-e', 'Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0)', '--'],
    };
    const checkpointer = new CudaCheckpointer({ availability: available, helper: hanging, logger, timers });
    const outcome = checkpointer.state(4242, { deadlineMs: 5_000 }).catch((e: unknown) => e);
    timers.advance(5_000);
    expect(await outcome).toBeInstanceOf(GpuCheckpointDeadlineError);
    checkpointer.close();
  });

  it('gives the lock half the deadline, at most 10 s, so that a busy process answers before the kill', () => {
    expect(lockTimeoutMs(12_000)).toBe(6_000);
    expect(lockTimeoutMs(76_000)).toBe(10_000);
    expect(lockTimeoutMs(1)).toBe(1);
  });

  it('lists the GPU processes among the pids asked about, from nvidia-smi', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'corral-smi-'));
    const smi = join(dir, 'nvidia-smi');
    // A stand-in nvidia-smi that answers the compute-apps query only (with the query it was given).
    writeFileSync(
      smi,
      '#!/bin/sh\n[ "$1 $2" = "--query-compute-apps=pid,gpu_uuid,used_memory --format=csv,noheader,nounits" ] || exit 2\n' +
        'echo "100, GPU-a, 4096"\necho "200, GPU-a, 10"\necho "300, GPU-b, 20"\n',
    );
    chmodSync(smi, 0o755);
    const checkpointer = new CudaCheckpointer({
      availability: available,
      helper: defaultHelperCommand(),
      logger,
      nvidiaSmi: smi,
    });
    expect(await checkpointer.gpuProcesses([100, 300, 400])).toEqual([
      { pid: 100, gpuUuid: 'GPU-a', usedBytes: 4096 * 1024 * 1024 },
      { pid: 300, gpuUuid: 'GPU-b', usedBytes: 20 * 1024 * 1024 },
    ]);
  });
});
