/**
 * The local runtime's idle tiers: a worker with a cgroup (cgroup-freezer.ts) is frozen by the cgroup freezer, every
 * process in it stopped, those that left its process group (setsid) too; one without (no writable cgroup here) by
 * stopping its process group (SIGSTOP; SIGCONT thaws it). A suspend runs the `GpuCheckpointer` on the worker's
 * processes, thawed for the checkpoint and frozen again after it (a stopped process cannot be checkpointed). A worker
 * found frozen after a restart (its cgroup's freezer state, or `T` in /proc) is frozen, and suspended where the
 * driver holds one of its processes checkpointed.
 */
import fs from 'node:fs';
import type { GpuCheckpointer } from '../../ports/gpu-checkpoint.js';
import { cgroupFreezerState, cgroupPids, setFrozen, type WorkerCgroup } from '../cgroups/cgroup-freezer.js';
import { CheckpointSteps, type IdleTier, type IdleTiers, type SuspendedState } from '../idle-tiers.js';
import { RuntimeError } from '../types.js';
import { readProcStat } from './proc.js';
import { signalGroup } from './process-control.js';

/** A live worker as the tiers need it: its process group leader and, where it has one, its cgroup. */
export interface TierTarget {
  pid: number;
  cgroup?: WorkerCgroup | undefined;
}

export interface LocalTiersOptions {
  checkpointer?: GpuCheckpointer | undefined;
  /** The live worker, or undefined when there is no such worker. */
  targetOf: (workerId: string) => TierTarget | undefined;
  /** Tells the runtime the worker's tier (kept on its record, listed as `tier`) and, suspended, its GPU memory. */
  setTier: (workerId: string, tier: IdleTier | undefined, suspended?: SuspendedState) => void;
  /** Why new workers get no cgroup (their process groups are stopped instead); undefined when they get one. */
  freezerNote: () => string | undefined;
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

/** Whether the worker is frozen now: its cgroup's freezer says so, or (without one) its leader is stopped. */
export function isFrozen(target: TierTarget): boolean {
  return target.cgroup ? cgroupFreezerState(target.cgroup) === 'frozen' : isStopped(target.pid);
}

/** The worker's processes: its cgroup's, or its process group's. */
export function targetPids(target: TierTarget): number[] {
  if (target.cgroup) {
    const pids = cgroupPids(target.cgroup);
    if (pids.length > 0) return pids;
  }
  return groupPids(target.pid);
}

export class LocalIdleTiers extends CheckpointSteps implements IdleTiers {
  readonly #o: LocalTiersOptions;

  constructor(options: LocalTiersOptions) {
    super(options.checkpointer);
    this.#o = options;
  }

  /** Why frozen local workers are stopped by process group rather than by a cgroup (start-up log, messages). */
  get freezerNote(): string | undefined {
    return this.#o.freezerNote();
  }

  async freeze(workerId: string): Promise<void> {
    await this.#freezeTarget(workerId, true);
    this.#o.setTier(workerId, 'frozen');
  }

  async thaw(workerId: string): Promise<void> {
    await this.#freezeTarget(workerId, false);
    this.#o.setTier(workerId, undefined);
  }

  async suspend(workerId: string, options: { deadlineMs: number }): Promise<SuspendedState> {
    const state = await this.suspendWorker(this.#worker(workerId), options.deadlineMs);
    this.#o.setTier(workerId, 'suspended', state);
    return state;
  }

  restore(workerId: string, options: { deadlineMs: number }): Promise<void> {
    return this.restoreWorker(this.#worker(workerId), options.deadlineMs);
  }

  #worker(workerId: string) {
    const target = this.#target(workerId);
    return {
      thaw: () => this.thaw(workerId),
      freeze: () => this.freeze(workerId),
      pids: async () => targetPids(target),
    };
  }

  /**
   * The tier of a worker adopted after a restart: frozen (its cgroup frozen, or its leader stopped); suspended where
   * its state file records a suspend and the driver, asked, says its process is checkpointed. The driver answers of
   * a frozen process late or never (on the H200: once after 7 s, else not within 15 s) and of a running one at once,
   * so the worker is thawed for the question and frozen again after (its CUDA calls wait on the checkpoint's lock
   * meanwhile). A worker with no suspend recorded is not asked about: it was only frozen. No answer: the record,
   * written only after a checkpoint, stands.
   */
  async tierOfAdopted(target: TierTarget, recordedSuspend: boolean): Promise<IdleTier | undefined> {
    if (!isFrozen(target)) return undefined;
    if (!recordedSuspend) return 'frozen';
    try {
      await this.#setFrozen(target, false);
      return (await this.anyCheckpointed(targetPids(target), STATE_DEADLINE_MS)) ? 'suspended' : 'frozen';
    } catch {
      return 'suspended';
    } finally {
      await this.#setFrozen(target, true).catch(() => undefined);
    }
  }

  #target(workerId: string): TierTarget {
    const target = this.#o.targetOf(workerId);
    if (target === undefined) throw new RuntimeError('NOT_FOUND', `no worker ${workerId}`);
    return target;
  }

  async #freezeTarget(workerId: string, frozen: boolean): Promise<void> {
    if (!(await this.#setFrozen(this.#target(workerId), frozen)))
      throw new RuntimeError('NOT_FOUND', `worker ${workerId}: its process group is gone`);
  }

  /** Freezes or thaws through the cgroup, else by signals to the process group; false: the group is gone. */
  async #setFrozen(target: TierTarget, frozen: boolean): Promise<boolean> {
    if (target.cgroup) {
      await setFrozen(target.cgroup, frozen);
      return true;
    }
    return signalGroup(target.pid, frozen ? 'SIGSTOP' : 'SIGCONT');
  }
}
