/**
 * A failed helper answer as the error a runtime handles: one class per failure (errors/gpu-checkpoint-catalogue.ts),
 * chosen by the CUresult the driver answered. Pure.
 */

import type { CorralErrorOptions } from '../../errors/corral-error.js';
import {
  GpuCheckpointDriverError,
  type GpuCheckpointError,
  GpuCheckpointHelperError,
  GpuCheckpointIllegalStateError,
  GpuCheckpointLockTimeoutError,
  GpuCheckpointNoProcessError,
  GpuCheckpointNotSupportedError,
  GpuCheckpointOutOfMemoryError,
  GpuCheckpointUnavailableError,
} from '../../errors/gpu-checkpoint-catalogue.js';
import { cudaResultName, processStateOf } from './cuda-abi.js';
import type { HelperAnswer } from './helper-protocol.js';

type Failed = Extract<HelperAnswer, { ok: false }>;

const BY_RESULT: Record<number, new (message: string, options?: CorralErrorOptions) => GpuCheckpointError> = {
  1: GpuCheckpointNoProcessError,
  2: GpuCheckpointOutOfMemoryError,
  401: GpuCheckpointIllegalStateError,
  500: GpuCheckpointNoProcessError,
  801: GpuCheckpointNotSupportedError,
};

/** The error for a failed answer about process `pid`; metadata keeps the op, the call, the CUresult and the steps. */
export function errorOfAnswer(answer: Failed, pid: number): GpuCheckpointError {
  const { error } = answer;
  const metadata: Record<string, unknown> = { op: answer.op, pid, steps: answer.steps };
  if (answer.unlocked !== undefined) metadata.unlocked = answer.unlocked;
  switch (error.kind) {
    case 'no-libcuda':
      return new GpuCheckpointUnavailableError(error.message, { metadata });
    case 'missing-entry-points':
      return new GpuCheckpointUnavailableError(`libcuda.so.1 lacks ${error.missing.join(', ')}`, {
        metadata: { ...metadata, missing: error.missing },
      });
    case 'usage':
      return new GpuCheckpointHelperError(error.message, { metadata });
    case 'state':
      return new GpuCheckpointIllegalStateError(
        `process ${pid} is ${processStateOf(error.state)} to the driver: ${answer.op} cannot start from there`,
        { metadata: { ...metadata, state: processStateOf(error.state) } },
      );
    case 'cuda': {
      const name = cudaResultName(error.result, error.name);
      const message = `${error.call} for process ${pid} answered ${name}`;
      const withCode = { metadata: { ...metadata, call: error.call, cudaError: name, result: error.result } };
      // Seen on an H200 (driver 580): a process that never made a CUDA context answers GetState with NOT_INITIALIZED.
      if (error.result === 3 && error.call === 'cuCheckpointProcessGetState') {
        return new GpuCheckpointNoProcessError(message, withCode);
      }
      if (error.result === 909 && error.call === 'cuCheckpointProcessLock') {
        return new GpuCheckpointLockTimeoutError(message, withCode);
      }
      const ErrorClass = BY_RESULT[error.result] ?? GpuCheckpointDriverError;
      return new ErrorClass(message, withCode);
    }
  }
}
