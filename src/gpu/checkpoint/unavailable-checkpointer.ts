/**
 * The checkpointer where the suspended tier is off: it carries the reason (simulated GPUs, no libcuda, a driver
 * without the API) to the runtimes, which say it in their idle tiers' `suspendable`, and refuses every call.
 */
import { GpuCheckpointUnavailableError } from '../../errors/gpu-checkpoint-catalogue.js';
import type {
  GpuCheckpointAvailability,
  GpuCheckpointer,
  GpuProcessState,
} from '../../ports/gpu-checkpoint.js';

export class UnavailableCheckpointer implements GpuCheckpointer {
  readonly availability: GpuCheckpointAvailability;
  readonly #reason: string;

  constructor(reason: string) {
    this.#reason = reason;
    this.availability = { available: false, reason };
  }

  async gpuProcesses(): Promise<never> {
    throw this.#refusal();
  }

  async suspend(): Promise<void> {
    throw this.#refusal();
  }

  async resume(): Promise<void> {
    throw this.#refusal();
  }

  async state(): Promise<GpuProcessState> {
    throw this.#refusal();
  }

  #refusal(): Error {
    return new GpuCheckpointUnavailableError(this.#reason);
  }
}
