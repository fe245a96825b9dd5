/**
 * Deadlines for a suspend and a resume, from the GPU memory the process holds: the H200's rates (DESIGN.md section 7:
 * 40 GB checkpointed in 18.2 s, restored with the first answer in 6.2 s) with a margin of three, plus a fixed part for
 * the helper's start, cuInit and the lock. Pure.
 */

const GB = 1024 ** 3;
/** The helper's start, libcuda's load and cuInit, and the lock's own timeout (at most 10 s). */
const FIXED_MS = 20_000;
/** 18.2 s / 40 GB on the H200, times three. */
const CHECKPOINT_MS_PER_GB = 1_400;
/** 6.2 s / 40 GB on the H200, times three. */
const RESTORE_MS_PER_GB = 500;

export interface CheckpointDeadlines {
  suspendMs: number;
  resumeMs: number;
}

/** Deadlines for a process holding `usedBytes` of GPU memory (from `gpuProcesses`, recorded before the suspend). */
export function checkpointDeadlines(usedBytes: number): CheckpointDeadlines {
  const gb = Math.max(0, usedBytes) / GB;
  return {
    suspendMs: Math.ceil(FIXED_MS + gb * CHECKPOINT_MS_PER_GB),
    resumeMs: Math.ceil(FIXED_MS + gb * RESTORE_MS_PER_GB),
  };
}
