import { describe, expect, it } from 'vitest';
import {
  GpuCheckpointDriverError,
  GpuCheckpointError,
  GpuCheckpointHelperError,
  GpuCheckpointIllegalStateError,
  GpuCheckpointLockTimeoutError,
  GpuCheckpointNoProcessError,
  GpuCheckpointNotSupportedError,
  GpuCheckpointOutOfMemoryError,
  GpuCheckpointUnavailableError,
} from '../../errors/gpu-checkpoint-catalogue.js';
import { errorOfAnswer } from './helper-errors.js';
import type { HelperFailure } from './helper-protocol.js';

const failed = (error: HelperFailure, op = 'resume') => ({ ok: false as const, op, steps: [], error });
const cuda = (call: string, result: number) => failed({ kind: 'cuda', call, result });

describe('a failed helper answer as an error', () => {
  it.each([
    [
      'a restore out of memory',
      cuda('cuCheckpointProcessRestore', 2),
      GpuCheckpointOutOfMemoryError,
      'GPU_CHECKPOINT_OUT_OF_MEMORY',
    ],
    [
      'a lock past its timeout',
      cuda('cuCheckpointProcessLock', 909),
      GpuCheckpointLockTimeoutError,
      'GPU_CHECKPOINT_LOCK_TIMEOUT',
    ],
    [
      'a timeout of another call',
      cuda('cuCheckpointProcessCheckpoint', 909),
      GpuCheckpointDriverError,
      'GPU_CHECKPOINT_DRIVER_ERROR',
    ],
    [
      'a checkpoint in the wrong state',
      cuda('cuCheckpointProcessCheckpoint', 401),
      GpuCheckpointIllegalStateError,
      'GPU_CHECKPOINT_ILLEGAL_STATE',
    ],
    [
      'no such CUDA process',
      cuda('cuCheckpointProcessGetState', 500),
      GpuCheckpointNoProcessError,
      'GPU_CHECKPOINT_NO_CUDA_PROCESS',
    ],
    [
      'a process without a CUDA context (as the H200 answered)',
      cuda('cuCheckpointProcessGetState', 3),
      GpuCheckpointNoProcessError,
      'GPU_CHECKPOINT_NO_CUDA_PROCESS',
    ],
    [
      'an invalid pid',
      cuda('cuCheckpointProcessGetState', 1),
      GpuCheckpointNoProcessError,
      'GPU_CHECKPOINT_NO_CUDA_PROCESS',
    ],
    [
      'not supported',
      cuda('cuCheckpointProcessLock', 801),
      GpuCheckpointNotSupportedError,
      'GPU_CHECKPOINT_NOT_SUPPORTED',
    ],
    [
      'the OS error of a second restore',
      cuda('cuCheckpointProcessRestore', 304),
      GpuCheckpointDriverError,
      'GPU_CHECKPOINT_DRIVER_ERROR',
    ],
    [
      'no libcuda',
      failed({ kind: 'no-libcuda', message: 'libcuda not found' }),
      GpuCheckpointUnavailableError,
      'GPU_CHECKPOINT_UNAVAILABLE',
    ],
    [
      'an old driver',
      failed({ kind: 'missing-entry-points', missing: ['cuCheckpointProcessLock'] }),
      GpuCheckpointUnavailableError,
      'GPU_CHECKPOINT_UNAVAILABLE',
    ],
    [
      'a failed process',
      failed({ kind: 'state', state: 3 }),
      GpuCheckpointIllegalStateError,
      'GPU_CHECKPOINT_ILLEGAL_STATE',
    ],
    [
      'a wrong command line',
      failed({ kind: 'usage', message: 'unknown operation' }),
      GpuCheckpointHelperError,
      'GPU_CHECKPOINT_HELPER_FAILED',
    ],
  ])('%s', (_name, answer, errorClass, code) => {
    const error = errorOfAnswer(answer, 4242);
    expect(error).toBeInstanceOf(errorClass);
    expect(error).toBeInstanceOf(GpuCheckpointError);
    expect(error.code).toBe(code);
    expect(error.metadata).toMatchObject({ pid: 4242, op: answer.op });
  });

  it('names the call and the CUresult in the message and the metadata', () => {
    const error = errorOfAnswer(cuda('cuCheckpointProcessRestore', 304), 7);
    expect(error.message).toBe(
      'cuCheckpointProcessRestore for process 7 answered CUDA_ERROR_OPERATING_SYSTEM',
    );
    expect(error.metadata).toMatchObject({
      call: 'cuCheckpointProcessRestore',
      cudaError: 'CUDA_ERROR_OPERATING_SYSTEM',
      result: 304,
    });
  });

  it('says whether a suspend whose checkpoint failed left the process unlocked', () => {
    const answer = { ...cuda('cuCheckpointProcessCheckpoint', 999), op: 'suspend', unlocked: true };
    expect(errorOfAnswer(answer, 7).metadata).toMatchObject({
      unlocked: true,
      cudaError: 'CUDA_ERROR_UNKNOWN',
    });
  });

  it('names the state a process could not start from', () => {
    expect(errorOfAnswer(failed({ kind: 'state', state: 3 }, 'suspend'), 7).message).toBe(
      'process 7 is failed to the driver: suspend cannot start from there',
    );
  });
});
