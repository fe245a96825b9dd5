/**
 * The Docker runtime's idle tiers: a frozen worker is a paused container (`docker pause`: the cgroup freezer stops
 * every process in it), a suspended one is paused with its GPU processes checkpointed by the driver (through the
 * `GpuCheckpointer`, on the host pids `docker top` lists); a paused container found after a restart is suspended
 * where the driver holds one of its processes checkpointed.
 */
import type Dockerode from 'dockerode';
import type { GpuCheckpointer } from '../../ports/gpu-checkpoint.js';
import {
  anyCheckpointed,
  checkpointProcesses,
  type IdleTiers,
  restoreProcesses,
  type SuspendedState,
  suspendSupport,
  type TierSupport,
} from '../idle-tiers.js';
import { RuntimeError, type RuntimeWorker } from '../types.js';
import { engineError, reasonOf } from './engine-errors.js';

export interface DockerTiersOptions {
  docker: Dockerode;
  checkpointer?: GpuCheckpointer | undefined;
  /** The ids of the worker's containers (normally one). */
  containerIds: (workerId: string) => Promise<string[]>;
  /** The engine's address, for messages. */
  address: string;
}

/** How long the driver may take to say a process's state when a listing asks (adoption after a restart). */
const STATE_DEADLINE_MS = 5_000;

/** The engine's answer to a pause of a paused container, or an unpause of a running one: nothing to do. */
function alreadyThere(error: unknown): boolean {
  return /is (already )?paused|is not paused/i.test(reasonOf(error));
}

export class DockerIdleTiers implements IdleTiers {
  readonly suspendable: TierSupport;
  readonly #o: DockerTiersOptions;

  constructor(options: DockerTiersOptions) {
    this.#o = options;
    this.suspendable = suspendSupport(options.checkpointer);
  }

  async freeze(workerId: string): Promise<void> {
    for (const id of await this.#ids(workerId)) await this.#call(id, workerId, 'pause');
  }

  async thaw(workerId: string): Promise<void> {
    for (const id of await this.#ids(workerId)) await this.#call(id, workerId, 'unpause');
  }

  async suspend(workerId: string, options: { deadlineMs: number }): Promise<SuspendedState> {
    const checkpointer = this.#checkpointer();
    await this.thaw(workerId);
    const state = await checkpointProcesses(checkpointer, await this.#pids(workerId), options.deadlineMs);
    await this.freeze(workerId);
    return state;
  }

  async restore(workerId: string, options: { deadlineMs: number }): Promise<void> {
    const checkpointer = this.#checkpointer();
    await this.thaw(workerId);
    await restoreProcesses(checkpointer, await this.#pids(workerId), options.deadlineMs);
  }

  /** A listed frozen worker is suspended where the driver holds one of its processes checkpointed. */
  async refine(worker: RuntimeWorker): Promise<RuntimeWorker> {
    if (worker.tier !== 'frozen' || !this.suspendable.available) return worker;
    try {
      const pids = await this.#pids(worker.workerId);
      return (await anyCheckpointed(this.#o.checkpointer, pids, STATE_DEADLINE_MS))
        ? { ...worker, tier: 'suspended' }
        : worker;
    } catch {
      return worker;
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

  async #ids(workerId: string): Promise<string[]> {
    const ids = await this.#o.containerIds(workerId);
    if (ids.length === 0) throw new RuntimeError('NOT_FOUND', `no worker ${workerId}`);
    return ids;
  }

  async #call(id: string, workerId: string, call: 'pause' | 'unpause'): Promise<void> {
    try {
      await this.#o.docker.getContainer(id)[call]();
    } catch (error) {
      if (alreadyThere(error)) return;
      throw engineError(error, `cannot ${call} worker ${workerId}`, this.#o.address);
    }
  }

  /** The host pids of every process in the worker's containers (`docker top`). */
  async #pids(workerId: string): Promise<number[]> {
    const pids: number[] = [];
    for (const id of await this.#ids(workerId)) {
      const top = (await this.#o.docker.getContainer(id).top({ ps_args: '-eo pid' })) as {
        Titles?: string[];
        Processes?: string[][];
      };
      const column = Math.max(0, (top.Titles ?? []).indexOf('PID'));
      for (const row of top.Processes ?? []) {
        const pid = Number(row[column]);
        if (Number.isInteger(pid) && pid > 0) pids.push(pid);
      }
    }
    return pids;
  }
}
