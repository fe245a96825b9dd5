/**
 * The facts of the CUDA driver API that the checkpoint helper relies on, as plain data: the entry points, the
 * CUresult codes it names, the CUprocessState values, the size of the argument structures, and the first driver API
 * version with the process checkpoint API. Taken from the driver API's headers (cuda.h, CUDA 12.8 and 13.0):
 * `CUcheckpointLockArgs` is `{ unsigned int timeoutMs; unsigned int reserved0; cuuint64_t reserved1[7]; }` (64 bytes,
 * the timeout first), and the checkpoint, restore and unlock arguments are 64 bytes that must be zero.
 */
import type { GpuProcessState } from '../../ports/gpu-checkpoint.js';

/** The library the driver installs; no toolkit is needed. */
export const LIBCUDA = 'libcuda.so.1';

/** cuDriverGetVersion's value for CUDA 12.8, the driver API of driver 570, the first with the checkpoint API. */
export const MIN_DRIVER_API_VERSION = 12080;

/** Every argument structure of the checkpoint calls is 64 bytes; the lock's timeout is its first 32-bit word. */
export const CHECKPOINT_ARGS_BYTES = 64;

/** The entry points the helper calls, each `CUresult fn(int pid, ...)` besides the first two. */
export const CHECKPOINT_ENTRY_POINTS = [
  'cuCheckpointProcessGetState',
  'cuCheckpointProcessLock',
  'cuCheckpointProcessCheckpoint',
  'cuCheckpointProcessRestore',
  'cuCheckpointProcessUnlock',
] as const;

export type CheckpointEntryPoint = (typeof CHECKPOINT_ENTRY_POINTS)[number];

/** The CUresult codes that the checkpoint calls document or that were seen on the H200, by value. */
export const CUDA_RESULT_NAMES: Readonly<Record<number, string>> = {
  0: 'CUDA_SUCCESS',
  1: 'CUDA_ERROR_INVALID_VALUE',
  2: 'CUDA_ERROR_OUT_OF_MEMORY',
  3: 'CUDA_ERROR_NOT_INITIALIZED',
  4: 'CUDA_ERROR_DEINITIALIZED',
  100: 'CUDA_ERROR_NO_DEVICE',
  101: 'CUDA_ERROR_INVALID_DEVICE',
  304: 'CUDA_ERROR_OPERATING_SYSTEM',
  401: 'CUDA_ERROR_ILLEGAL_STATE',
  500: 'CUDA_ERROR_NOT_FOUND',
  801: 'CUDA_ERROR_NOT_SUPPORTED',
  909: 'CUDA_ERROR_TIMEOUT',
  999: 'CUDA_ERROR_UNKNOWN',
};

/** A CUresult's name: the helper's (from cuGetErrorName) where it has one, else this table's, else the number. */
export function cudaResultName(result: number, fromDriver?: string): string {
  return fromDriver ?? CUDA_RESULT_NAMES[result] ?? `CUresult ${result}`;
}

/**
 * CUprocessState by value. Drivers newer than 13.0 add transient values (4 checkpointing, 5 restoring) seen only
 * while another call on the process is under way; Corral reads them as `failed`, since it never runs two at once.
 */
export function processStateOf(value: number): Exclude<GpuProcessState, 'none'> {
  return (['running', 'locked', 'checkpointed', 'failed'] as const)[value] ?? 'failed';
}

/** "13.0" for 13000: cuDriverGetVersion's value as CUDA writes it (major * 1000 + minor * 10). */
export function formatDriverApiVersion(version: number): string {
  return `${Math.floor(version / 1000)}.${Math.floor((version % 1000) / 10)}`;
}
