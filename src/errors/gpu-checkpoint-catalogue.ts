/**
 * The GPU checkpoint's error catalogue: how a call to the CUDA driver's process checkpoint API failed (through
 * `gpu/checkpoint/`), one class per failure, each with a stable UPPER_SNAKE code. A runtime that suspends or restores
 * a worker matches on the class or the code; the status is what the API would answer were the error shown to a
 * client. docs/workers.md documents every code (a test checks it). Never rename a code.
 */
import { CorralError, type CorralErrorOptions } from './corral-error.js';

export const GPU_CHECKPOINT_ERROR_CATALOGUE = {
  GPU_CHECKPOINT_UNAVAILABLE: {
    status: 503,
    description:
      'The suspended tier is off on this server: no libcuda.so.1, a driver older than 570, the entry points missing, or simulated GPUs; the message says which.',
  },
  GPU_CHECKPOINT_DEADLINE: {
    status: 504,
    description:
      'A driver call did not return within its deadline; its helper process was killed and the process it acted on is in an unknown state.',
  },
  GPU_CHECKPOINT_HELPER_FAILED: {
    status: 500,
    description:
      'The helper process that calls the driver exited without its one JSON line (crashed or killed).',
  },
  GPU_CHECKPOINT_NO_CUDA_PROCESS: {
    status: 404,
    description:
      'The process does not exist or holds no CUDA context (CUDA_ERROR_NOT_FOUND, CUDA_ERROR_INVALID_VALUE).',
  },
  GPU_CHECKPOINT_LOCK_TIMEOUT: {
    status: 503,
    description:
      'The process could not be locked within its lock timeout (CUDA_ERROR_TIMEOUT); it keeps running.',
  },
  GPU_CHECKPOINT_ILLEGAL_STATE: {
    status: 409,
    description:
      'The process is not in the state the call needs (CUDA_ERROR_ILLEGAL_STATE): for example a checkpoint of a process that is not locked.',
  },
  GPU_CHECKPOINT_OUT_OF_MEMORY: {
    status: 503,
    description:
      'The GPU has not the memory to restore the process (CUDA_ERROR_OUT_OF_MEMORY); a failed restore is final.',
  },
  GPU_CHECKPOINT_NOT_SUPPORTED: {
    status: 501,
    description: 'The driver does not support checkpointing this process (CUDA_ERROR_NOT_SUPPORTED).',
  },
  GPU_CHECKPOINT_DRIVER_ERROR: {
    status: 500,
    description:
      'Any other CUresult; metadata.cudaError names it (CUDA_ERROR_OPERATING_SYSTEM after a failed restore).',
  },
} as const satisfies Record<string, { status: number; description: string }>;

export type GpuCheckpointErrorCode = keyof typeof GPU_CHECKPOINT_ERROR_CATALOGUE;

/** The base of every GPU checkpoint failure; catch it to handle them all, or a subclass for one. */
export abstract class GpuCheckpointError extends CorralError<GpuCheckpointErrorCode> {
  constructor(code: GpuCheckpointErrorCode, message: string, options: CorralErrorOptions = {}) {
    super(code, GPU_CHECKPOINT_ERROR_CATALOGUE[code], message, options);
  }
}

/** One class per code: `instanceof` tells the failures apart, and `code` is the class's own. */
function failure<Code extends GpuCheckpointErrorCode>(code: Code, name: string) {
  return class extends GpuCheckpointError {
    declare readonly code: Code;
    override name = name;
    constructor(message: string, options?: CorralErrorOptions) {
      super(code, message, options);
    }
  };
}

export const GpuCheckpointUnavailableError = failure(
  'GPU_CHECKPOINT_UNAVAILABLE',
  'GpuCheckpointUnavailableError',
);
export const GpuCheckpointDeadlineError = failure('GPU_CHECKPOINT_DEADLINE', 'GpuCheckpointDeadlineError');
export const GpuCheckpointHelperError = failure('GPU_CHECKPOINT_HELPER_FAILED', 'GpuCheckpointHelperError');
export const GpuCheckpointNoProcessError = failure(
  'GPU_CHECKPOINT_NO_CUDA_PROCESS',
  'GpuCheckpointNoProcessError',
);
export const GpuCheckpointLockTimeoutError = failure(
  'GPU_CHECKPOINT_LOCK_TIMEOUT',
  'GpuCheckpointLockTimeoutError',
);
export const GpuCheckpointIllegalStateError = failure(
  'GPU_CHECKPOINT_ILLEGAL_STATE',
  'GpuCheckpointIllegalStateError',
);
export const GpuCheckpointOutOfMemoryError = failure(
  'GPU_CHECKPOINT_OUT_OF_MEMORY',
  'GpuCheckpointOutOfMemoryError',
);
export const GpuCheckpointNotSupportedError = failure(
  'GPU_CHECKPOINT_NOT_SUPPORTED',
  'GpuCheckpointNotSupportedError',
);
export const GpuCheckpointDriverError = failure('GPU_CHECKPOINT_DRIVER_ERROR', 'GpuCheckpointDriverError');
