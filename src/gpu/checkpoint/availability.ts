/**
 * Whether the suspended tier can work on this server, from the helper's `driver-version` answer (or its failure),
 * with a reason a user can act on where it cannot. Pure.
 */
import type { GpuCheckpointAvailability } from '../../ports/gpu-checkpoint.js';
import { formatDriverApiVersion, MIN_DRIVER_API_VERSION } from './cuda-abi.js';
import type { HelperAnswer } from './helper-protocol.js';

const OFF = 'the suspended tier is off (idle workers are stopped instead)';
const UPGRADE = 'install or upgrade the NVIDIA driver to 570 or newer (CUDA 12.8 driver API)';

/** The availability for a probe that answered, or failed with `failure` (a deadline, a crash). */
export function availabilityOf(
  probe: { answer: HelperAnswer } | { failure: Error },
): GpuCheckpointAvailability {
  if ('failure' in probe) {
    return {
      available: false,
      reason: `the CUDA checkpoint helper failed (${probe.failure.message}): ${OFF}`,
    };
  }
  const { answer } = probe;
  if (!answer.ok) {
    const { error } = answer;
    if (error.kind === 'no-libcuda') {
      return {
        available: false,
        reason: `libcuda.so.1 cannot be loaded (no NVIDIA driver, or its libraries are not on the loader's path): ${OFF}; ${UPGRADE}`,
      };
    }
    return {
      available: false,
      reason: `the CUDA checkpoint helper failed (${JSON.stringify(error)}): ${OFF}`,
    };
  }
  const version = answer.driverVersion ?? 0;
  if (version > 0 && version < MIN_DRIVER_API_VERSION) {
    return {
      available: false,
      reason: `the NVIDIA driver's CUDA API is ${formatDriverApiVersion(version)}, and the process checkpoint API needs 12.8: ${OFF}; ${UPGRADE}`,
    };
  }
  if (answer.missing && answer.missing.length > 0) {
    return {
      available: false,
      reason: `libcuda.so.1 lacks ${answer.missing.join(', ')} (a driver older than 570): ${OFF}; ${UPGRADE}`,
    };
  }
  return { available: true, driverVersion: formatDriverApiVersion(version) };
}

/** Simulated GPUs hold no state to checkpoint. */
export const SIMULATED_GPUS_REASON = `GPUs are simulated (--gpus): there is no GPU state to checkpoint, so ${OFF}`;
