/**
 * What a runtime needs of the CUDA driver's process checkpoint API to suspend a worker (its GPU state moved to host
 * memory, its GPUs free for others) and to restore it. One implementation reaches the real driver through a helper
 * process that can be killed at a deadline (`gpu/checkpoint/`); where the driver lacks the API, or GPUs are simulated,
 * `availability` says why and the suspended tier is off.
 *
 * Order the caller keeps (DESIGN.md section 7): a stopped process cannot be checkpointed, so thaw, then `suspend`
 * each GPU process, then freeze; to wake, thaw, then `resume` each, and the worker serves. A failed `resume` is
 * final: the worker is dead.
 */

export type GpuCheckpointAvailability =
  | { available: true; driverVersion: string }
  | { available: false; reason: string };

/** The driver's view of one process (cuCheckpointProcessGetState), or `none` when it holds no CUDA context. */
export type GpuProcessState = 'running' | 'locked' | 'checkpointed' | 'failed' | 'none';

/** A process that holds memory on a GPU, as the driver reports it (`nvidia-smi --query-compute-apps`). */
export interface GpuProcess {
  pid: number;
  gpuUuid: string;
  usedBytes: number;
}

export interface GpuCheckpointer {
  readonly availability: GpuCheckpointAvailability;
  /** The processes among `pids` (host pids) that hold GPU memory now. */
  gpuProcesses(pids: readonly number[]): Promise<GpuProcess[]>;
  /** Lock, then checkpoint: the process's GPU memory moves to host memory. Rejects past `deadlineMs`. */
  suspend(pid: number, options: { deadlineMs: number }): Promise<void>;
  /** Restore, then unlock: the process's GPU state is back on its GPU. Rejects past `deadlineMs`; a failure is final. */
  resume(pid: number, options: { deadlineMs: number }): Promise<void>;
  /** The driver's state for one process, read back after a restart of Corral to adopt a suspended worker. */
  state(pid: number, options: { deadlineMs: number }): Promise<GpuProcessState>;
}
