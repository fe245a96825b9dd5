/**
 * The local runtime's idle tiers: a worker is frozen by stopping its process group (SIGSTOP; SIGCONT thaws it) and
 * suspended by the `GpuCheckpointer` on the group's processes, thawed for the checkpoint and stopped again after it
 * (a stopped process cannot be checkpointed). A worker found stopped after a restart (`T` in /proc) is frozen, and
 * suspended where the driver holds one of its processes checkpointed. The cgroup v2 freezer is not used yet: a
 * process that leaves its group (setsid) is not stopped with it.
 */
import fs from 'node:fs';
import type { GpuCheckpointer } from '../../ports/gpu-checkpoint.js';
import { CheckpointSteps, type IdleTier, type IdleTiers, type SuspendedState } from '../idle-tiers.js';
import { RuntimeError } from '../types.js';
import { readProcStat } from './proc.js';
import { signalGroup } from './process-control.js';

export interface LocalTiersOptions {
  checkpointer?: GpuCheckpointer | undefined;
  /** The live worker's process group leader, or undefined when there is no such worker. */
  pidOf: (workerId: string) => number | undefined;
  /** Tells the runtime the worker's tier (kept on its record, listed as `tier`). */
  setTier: (workerId: string, tier: IdleTier | undefined) => void;
}

/** How long the driver may take to say a process's state when a worker is adopted. */
const STATE_DEADLINE_MS = 5_000;

/** The pgrp field (5) of /proc/<pid>/stat. */
function pgrpOf(statText: string): number | undefined {
  const close = statText.lastIndexOf(')');
  if (close < 0) return undefined;
  const pgrp = Number(statText.slice(close + 2).split(' ')[2]);
  return Number.isInteger(pgrp) ? pgrp : undefined;
}

/** Every process in the group led by `leader` (the leader first), as /proc shows them. */
export function groupPids(leader: number): number[] {
  const pids = [leader];
  let entries: string[] = [];
  try {
    entries = fs.readdirSync('/proc');
  } catch {
    return pids;
  }
  for (const entry of entries) {
    const pid = Number(entry);
    if (!Number.isInteger(pid) || pid === leader) continue;
    try {
      if (pgrpOf(fs.readFileSync(`/proc/${pid}/stat`, 'utf8')) === leader) pids.push(pid);
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/** Whether the process is stopped (SIGSTOP): `T` in /proc/<pid>/stat. */
export function isStopped(pid: number): boolean {
  return readProcStat(pid)?.state === 'T';
}

export class LocalIdleTiers extends CheckpointSteps implements IdleTiers {
  readonly #o: LocalTiersOptions;

  constructor(options: LocalTiersOptions) {
    super(options.checkpointer);
    this.#o = options;
  }

  async freeze(workerId: string): Promise<void> {
    this.#signal(workerId, 'SIGSTOP');
    this.#o.setTier(workerId, 'frozen');
  }

  async thaw(workerId: string): Promise<void> {
    this.#signal(workerId, 'SIGCONT');
    this.#o.setTier(workerId, undefined);
  }

  async suspend(workerId: string, options: { deadlineMs: number }): Promise<SuspendedState> {
    const state = await this.suspendWorker(this.#worker(workerId), options.deadlineMs);
    this.#o.setTier(workerId, 'suspended');
    return state;
  }

  restore(workerId: string, options: { deadlineMs: number }): Promise<void> {
    return this.restoreWorker(this.#worker(workerId), options.deadlineMs);
  }

  #worker(workerId: string) {
    const leader = this.#leader(workerId);
    return {
      thaw: () => this.thaw(workerId),
      freeze: () => this.freeze(workerId),
      pids: async () => groupPids(leader),
    };
  }

  /** The tier of a worker adopted after a restart: stopped is frozen; with a checkpointed process, suspended. */
  async tierOfAdopted(pid: number): Promise<IdleTier | undefined> {
    if (!isStopped(pid)) return undefined;
    try {
      const suspended = await this.anyCheckpointed(groupPids(pid), STATE_DEADLINE_MS);
      return suspended ? 'suspended' : 'frozen';
    } catch {
      return 'frozen';
    }
  }

  #checkpointer(): GpuCheckpointer {
    const { checkpointer } = this.#o;
    if (!checkpointer || !this.suspendable.available)
      throw new RuntimeError(
        'RUNTIME_ERROR',
        'this runtime cannot suspend workers: no GPU checkpoint support',
      );
    return checkpointer;
  }

  #leader(workerId: string): number {
    const pid = this.#o.pidOf(workerId);
    if (pid === undefined) throw new RuntimeError('NOT_FOUND', `no worker ${workerId}`);
    return pid;
  }

  #signal(workerId: string, signal: 'SIGSTOP' | 'SIGCONT'): void {
    const pid = this.#leader(workerId);
    if (!signalGroup(pid, signal))
      throw new RuntimeError('NOT_FOUND', `worker ${workerId}: its process group is gone`);
  }
}
