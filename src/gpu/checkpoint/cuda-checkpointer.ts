/**
 * `GpuCheckpointer` on the real CUDA driver: each operation one request to the helper process kept running between
 * calls, under its deadline (helper-daemon.ts), the process list from nvidia-smi (compute-apps.ts). Suspend is lock (with a timeout of half the
 * deadline, at most 10 s), then checkpoint; resume is restore, then unlock; each goes only as far as the process's state needs.
 */
import type { Logger } from 'pino';
import {
  GpuCheckpointNoProcessError,
  GpuCheckpointUnavailableError,
} from '../../errors/gpu-checkpoint-catalogue.js';
import { systemTimers, type Timers } from '../../ports/clock.js';
import type {
  GpuCheckpointAvailability,
  GpuCheckpointer,
  GpuProcess,
  GpuProcessState,
} from '../../ports/gpu-checkpoint.js';
import { readComputeApps } from './compute-apps.js';
import { processStateOf } from './cuda-abi.js';
import { HelperDaemon } from './helper-daemon.js';
import { errorOfAnswer } from './helper-errors.js';
import type { HelperAnswer, HelperOp } from './helper-protocol.js';
import type { HelperCommand } from './run-helper.js';

export interface CudaCheckpointerOptions {
  availability: GpuCheckpointAvailability;
  helper: HelperCommand;
  logger: Logger;
  /** The nvidia-smi to ask for the GPU processes. */
  nvidiaSmi?: string;
  /** The timers of the deadlines. */
  timers?: Timers;
}

/**
 * The lock's own timeout: half the deadline, at most 10 s (an idle worker locks in milliseconds; the H200 locked in
 * 72 ms during a stream of kernels), so that a busy process answers CUDA_ERROR_TIMEOUT, and runs on, before the kill.
 */
export function lockTimeoutMs(deadlineMs: number): number {
  return Math.max(1, Math.min(10_000, Math.floor(deadlineMs / 2)));
}

export class CudaCheckpointer implements GpuCheckpointer {
  readonly availability: GpuCheckpointAvailability;
  readonly #daemon: HelperDaemon;
  readonly #logger: Logger;
  readonly #nvidiaSmi: string;

  constructor(options: CudaCheckpointerOptions) {
    this.availability = options.availability;
    this.#logger = options.logger;
    this.#nvidiaSmi = options.nvidiaSmi ?? 'nvidia-smi';
    this.#daemon = new HelperDaemon({
      helper: options.helper,
      logger: options.logger,
      timers: options.timers ?? systemTimers,
    });
  }

  /** Ends the helper process; calls not answered yet reject. */
  close(): void {
    this.#daemon.close();
  }

  async gpuProcesses(pids: readonly number[]): Promise<GpuProcess[]> {
    const wanted = new Set(pids);
    return (await readComputeApps(this.#nvidiaSmi)).filter((process) => wanted.has(process.pid));
  }

  async suspend(pid: number, options: { deadlineMs: number }): Promise<void> {
    const answer = await this.#run('suspend', pid, options.deadlineMs, [
      String(lockTimeoutMs(options.deadlineMs)),
    ]);
    this.#logger.info({ pid, from: stateName(answer), steps: answer.steps }, 'gpu process suspended');
  }

  async resume(pid: number, options: { deadlineMs: number }): Promise<void> {
    const answer = await this.#run('resume', pid, options.deadlineMs);
    this.#logger.info({ pid, from: stateName(answer), steps: answer.steps }, 'gpu process resumed');
  }

  async state(pid: number, options: { deadlineMs: number }): Promise<GpuProcessState> {
    try {
      const answer = await this.#run('state', pid, options.deadlineMs);
      return processStateOf(answer.state ?? 0);
    } catch (error) {
      if (error instanceof GpuCheckpointNoProcessError) return 'none';
      throw error;
    }
  }

  async #run(op: HelperOp, pid: number, deadlineMs: number, extra: string[] = []) {
    if (!this.availability.available) throw new GpuCheckpointUnavailableError(this.availability.reason);
    const answer = await this.#daemon.call(op, [String(pid), ...extra], deadlineMs);
    if (!answer.ok) throw errorOfAnswer(answer, pid);
    return answer;
  }
}

function stateName(answer: HelperAnswer): string | undefined {
  return answer.ok && answer.state !== undefined ? processStateOf(answer.state) : undefined;
}
