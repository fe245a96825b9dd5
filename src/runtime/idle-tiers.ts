/**
 * What a runtime offers for idle workers (docs/workers.md, Idle tiers): freezing (every process of the worker
 * stopped, its GPUs held; Docker's pause, the local runtime's cgroup freezer or SIGSTOP) and suspending (frozen, and
 * its GPU state moved to host memory by the driver's checkpoint API through a `GpuCheckpointer`, so that it holds no
 * GPU). A runtime without a freezer (kubernetes without its node agents) has no `idleTiers`; `idleTiersOff` says why.
 */
import type { GpuCheckpointer } from '../ports/gpu-checkpoint.js';
import { RuntimeError } from './types.js';

export type IdleTier = 'frozen' | 'suspended';

/** Whether a tier works here, and why not. */
export type TierSupport = { available: true } | { available: false; reason: string };

/** What a suspend moved off the GPUs: the GPU memory the worker must find free again to be restored. */
export interface SuspendedState {
  /** GPU memory its processes held, per GPU uuid, in bytes. */
  gpuBytes: Record<string, number>;
}

export interface IdleTiers {
  /** Whether `suspend` works (a GPU checkpointer with the driver's API), and why not. */
  readonly suspendable: TierSupport;
  /**
   * Where the freezer is weaker than a cgroup's (the local runtime without a writable cgroup stops the process
   * group: a process that left it runs on), why; frozen workers' messages and the start-up log say it.
   */
  readonly freezerNote?: string | undefined;
  /** Stops every process of the worker (idempotent); it keeps its memory, GPUs and address. */
  freeze(workerId: string): Promise<void>;
  /** Lets a frozen worker run again (idempotent). */
  thaw(workerId: string): Promise<void>;
  /**
   * A frozen worker's GPU state to host memory: thaw, checkpoint each GPU process (a stopped process cannot be
   * checkpointed), freeze again. Rejects past `deadlineMs` (the worker is then left frozen with its GPUs).
   */
  suspend(workerId: string, options: { deadlineMs: number }): Promise<SuspendedState>;
  /** Back from suspended to running: thaw, then restore each GPU process. A failure is final: the worker is dead. */
  restore(workerId: string, options: { deadlineMs: number }): Promise<void>;
}

/** Why a runtime without idle tiers has none (the API's refusal of keepFrozen/keepSuspended names it). */
export function idleTiersOff(runtime: { name: string; idleTiers?: IdleTiers }): string | undefined {
  if (runtime.idleTiers) return undefined;
  if (runtime.name === 'kubernetes')
    return 'the kubernetes runtime has no node agent configured (kubernetes.nodeAgent: the corral-node DaemonSet freezes pods), so it has no idle tiers';
  return `the ${runtime.name} runtime has no freezer a worker can use, so it has no idle tiers`;
}

/** Whether suspending works with this checkpointer, and why not. */
export function suspendSupport(checkpointer: GpuCheckpointer | undefined): TierSupport {
  if (!checkpointer) return { available: false, reason: 'no GPU checkpoint support built' };
  const { availability } = checkpointer;
  return availability.available ? { available: true } : { available: false, reason: availability.reason };
}

/** What a runtime does to one worker for a suspend or a restore: thaw and freeze it, list its processes' host pids. */
export interface FrozenWorker {
  thaw(): Promise<void>;
  freeze(): Promise<void>;
  pids(): Promise<number[]>;
}

/**
 * Suspend and restore in the driver's order (ports/gpu-checkpoint.ts), for every runtime: a stopped process cannot be
 * checkpointed, so a suspend thaws the worker, checkpoints each process holding GPU memory, then freezes it again; a
 * restore thaws it, then restores each process the driver holds checkpointed.
 */
export class CheckpointSteps {
  readonly suspendable: TierSupport;
  readonly #checkpointer: GpuCheckpointer | undefined;

  /** Each runtime's idle tiers extend this: `suspendable` says whether `checkpointer` can be used, and why not. */
  constructor(checkpointer: GpuCheckpointer | undefined) {
    this.#checkpointer = checkpointer;
    this.suspendable = suspendSupport(checkpointer);
  }

  protected async suspendWorker(worker: FrozenWorker, deadlineMs: number): Promise<SuspendedState> {
    const checkpointer = this.#usable();
    await worker.thaw();
    const processes = await checkpointer.gpuProcesses(await worker.pids());
    const gpuBytes: Record<string, number> = {};
    for (const p of processes) {
      await checkpointer.suspend(p.pid, { deadlineMs });
      gpuBytes[p.gpuUuid] = (gpuBytes[p.gpuUuid] ?? 0) + p.usedBytes;
    }
    await worker.freeze();
    return { gpuBytes };
  }

  protected async restoreWorker(worker: Omit<FrozenWorker, 'freeze'>, deadlineMs: number): Promise<void> {
    const checkpointer = this.#usable();
    await worker.thaw();
    for (const pid of await worker.pids()) {
      if ((await checkpointer.state(pid, { deadlineMs })) === 'checkpointed')
        await checkpointer.resume(pid, { deadlineMs });
    }
  }

  /** Whether the driver holds one of these processes checkpointed (an adopted worker's tier after a restart). */
  protected async anyCheckpointed(pids: readonly number[], deadlineMs: number): Promise<boolean> {
    return anyCheckpointed(this.#checkpointer, pids, deadlineMs);
  }

  #usable(): GpuCheckpointer {
    const checkpointer = this.#checkpointer;
    if (!checkpointer || !this.suspendable.available)
      throw new RuntimeError(
        'RUNTIME_ERROR',
        'this runtime cannot suspend workers: no GPU checkpoint support',
      );
    return checkpointer;
  }
}

/** Whether any of `pids` is held checkpointed by the driver (an adopted worker's tier after a restart). */
export async function anyCheckpointed(
  checkpointer: GpuCheckpointer | undefined,
  pids: readonly number[],
  deadlineMs: number,
): Promise<boolean> {
  if (!checkpointer?.availability.available) return false;
  for (const pid of pids) {
    if ((await checkpointer.state(pid, { deadlineMs })) === 'checkpointed') return true;
  }
  return false;
}
