/**
 * The fake runtime's idle tiers: a worker's tier is a mark on its record (listed as `tier`), a freeze or thaw sends
 * the `paused`/`resumed` event Docker sends, and a suspend or restore goes through the `GpuCheckpointer` given (in
 * tests, test/support/memory-checkpointer.ts) with a fake pid per worker, in the order the real driver needs.
 */
import type { GpuCheckpointer } from '../../ports/gpu-checkpoint.js';
import { CheckpointSteps, type IdleTier, type IdleTiers, type SuspendedState } from '../idle-tiers.js';
import { RuntimeError, type RuntimeEvent } from '../types.js';

export interface FakeTiersOptions {
  checkpointer?: GpuCheckpointer | undefined;
  /** Whether the runtime has a live worker by this id. */
  exists: (workerId: string) => boolean;
  emit: (event: RuntimeEvent) => void;
}

const FAKE_PID_BASE = 10_000;

export class FakeIdleTiers extends CheckpointSteps implements IdleTiers {
  /** freeze/thaw/suspend/restore calls made, in order (tests read them). */
  readonly calls: string[] = [];
  readonly #o: FakeTiersOptions;
  readonly #tiers = new Map<string, IdleTier>();
  readonly #pids = new Map<string, number>();
  /** A suspended worker's GPU memory, as the real runtimes record it with the worker (listed back after a restart). */
  readonly #suspendedBytes = new Map<string, Record<string, number>>();
  #nextPid = FAKE_PID_BASE;
  /** Set by tests: the next freeze or thaw fails with this reason. */
  failNext: string | undefined;

  constructor(options: FakeTiersOptions) {
    super(options.checkpointer);
    this.#o = options;
  }

  /** The fake pid of the worker's one process (what the checkpointer is asked about). */
  pidOf(workerId: string): number {
    let pid = this.#pids.get(workerId);
    if (pid === undefined) {
      pid = this.#nextPid++;
      this.#pids.set(workerId, pid);
    }
    return pid;
  }

  tierOf(workerId: string): IdleTier | undefined {
    return this.#tiers.get(workerId);
  }

  suspendedBytesOf(workerId: string): Record<string, number> | undefined {
    const bytes = this.#suspendedBytes.get(workerId);
    return bytes ? { ...bytes } : undefined;
  }

  /** Marks a worker as a restarted runtime would list it (adoption tests). */
  setTier(workerId: string, tier: IdleTier | undefined): void {
    if (tier) this.#tiers.set(workerId, tier);
    else this.#tiers.delete(workerId);
  }

  forget(workerId: string): void {
    this.#tiers.delete(workerId);
    this.#pids.delete(workerId);
    this.#suspendedBytes.delete(workerId);
  }

  async freeze(workerId: string): Promise<void> {
    this.#check(workerId, 'freeze');
    if (this.#tiers.has(workerId)) return;
    this.#tiers.set(workerId, 'frozen');
    this.#o.emit({ type: 'paused', workerId });
  }

  async thaw(workerId: string): Promise<void> {
    this.#check(workerId, 'thaw');
    if (!this.#tiers.has(workerId)) return;
    this.#tiers.delete(workerId);
    this.#o.emit({ type: 'resumed', workerId });
  }

  /** Thawed for the checkpoint and frozen again after it, as the real runtimes do (no events: Corral's own calls). */
  async suspend(workerId: string, options: { deadlineMs: number }): Promise<SuspendedState> {
    this.#check(workerId, 'suspend');
    const state = await this.suspendWorker(this.#worker(workerId), options.deadlineMs);
    this.#tiers.set(workerId, 'suspended');
    this.#suspendedBytes.set(workerId, { ...state.gpuBytes });
    return state;
  }

  async restore(workerId: string, options: { deadlineMs: number }): Promise<void> {
    this.#check(workerId, 'restore');
    await this.restoreWorker(this.#worker(workerId), options.deadlineMs);
  }

  #worker(workerId: string) {
    return {
      thaw: async () => {
        this.#tiers.delete(workerId);
        this.#suspendedBytes.delete(workerId);
      },
      freeze: async () => {
        this.#tiers.set(workerId, 'frozen');
      },
      pids: async () => [this.pidOf(workerId)],
    };
  }

  #check(workerId: string, call: string): void {
    this.calls.push(`${call} ${workerId}`);
    if (!this.#o.exists(workerId)) throw new RuntimeError('NOT_FOUND', `no worker ${workerId}`);
    const failure = this.failNext;
    if (failure !== undefined) {
      this.failNext = undefined;
      throw new RuntimeError('RUNTIME_ERROR', failure);
    }
  }
}
