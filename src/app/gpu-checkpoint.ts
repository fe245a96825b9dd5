/**
 * The GPU checkpointer of `corral serve`, or why there is none: the CUDA driver's process checkpoint API through
 * its helper process where workers run on this machine's real GPUs (`--gpus auto`), none with simulated GPUs or
 * runtimes whose workers are elsewhere. Logged once at start-up; the runtimes take `checkpointer` in their options.
 */
import type { Logger } from 'pino';
import { availabilityOf, SIMULATED_GPUS_REASON } from '../gpu/checkpoint/availability.js';
import { CudaCheckpointer } from '../gpu/checkpoint/cuda-checkpointer.js';
import { defaultHelperCommand, type HelperCommand, runHelper } from '../gpu/checkpoint/run-helper.js';
import type { GpuSource } from '../gpu/inventory.js';
import type { GpuCheckpointAvailability, GpuCheckpointer } from '../ports/gpu-checkpoint.js';

export interface GpuCheckpointSetup {
  /** Undefined where the suspended tier is off; `availability.reason` says why. */
  checkpointer: GpuCheckpointer | undefined;
  availability: GpuCheckpointAvailability;
  /** Ends the checkpointer's helper process (none where the tier is off); serve calls it at shutdown. */
  close(): void;
}

export interface GpuCheckpointOptions {
  gpus: GpuSource;
  /** The `--runtime` choice. */
  runtime: string;
  logger: Logger;
  helper?: HelperCommand;
  /** How long the driver's version may take to read (the helper started, libcuda loaded). */
  probeDeadlineMs?: number;
}

/** Asks the driver (through the helper) whether it has the checkpoint API, and logs the answer. */
export async function gpuCheckpointFor(options: GpuCheckpointOptions): Promise<GpuCheckpointSetup> {
  const { logger } = options;
  const availability = await availabilityFor(options);
  if (!availability.available) {
    logger.info({ reason: availability.reason }, 'GPU checkpoint unavailable: the suspended tier is off');
    return { checkpointer: undefined, availability, close: () => undefined };
  }
  logger.info(
    { cudaDriverApi: availability.driverVersion },
    'GPU checkpoint available: idle workers can be suspended',
  );
  const helper = options.helper ?? defaultHelperCommand();
  const checkpointer = new CudaCheckpointer({ availability, helper, logger });
  return { checkpointer, availability, close: () => checkpointer.close() };
}

async function availabilityFor(options: GpuCheckpointOptions): Promise<GpuCheckpointAvailability> {
  if (options.gpus.kind === 'simulated') return { available: false, reason: SIMULATED_GPUS_REASON };
  if (options.runtime === 'kubernetes' || options.runtime === 'fake') {
    return {
      available: false,
      reason: `the ${options.runtime} runtime's workers are not processes of this machine: the suspended tier is off`,
    };
  }
  const helper = options.helper ?? defaultHelperCommand();
  try {
    return availabilityOf({
      answer: await runHelper(helper, 'driver-version', [], options.probeDeadlineMs ?? 15_000),
    });
  } catch (error) {
    return availabilityOf({ failure: error as Error });
  }
}
