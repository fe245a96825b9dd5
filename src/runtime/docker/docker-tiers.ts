/**
 * The Docker runtime's idle tiers: a frozen worker is a paused container (`docker pause`: the cgroup freezer stops
 * every process in it), a suspended one is paused with its GPU processes checkpointed by the driver (through the
 * `GpuCheckpointer`, on the host pids `docker top` lists); a paused container found after a restart is suspended
 * where the driver holds one of its processes checkpointed, with the GPU memory recorded at its suspend
 * (suspend-records.ts: labels are fixed at create, so the record is a file in Corral's data dir).
 */
import type Dockerode from 'dockerode';
import type { GpuCheckpointer } from '../../ports/gpu-checkpoint.js';
import { CheckpointSteps, type IdleTiers, type SuspendedState } from '../idle-tiers.js';
import type { SuspendRecords } from '../suspend-records.js';
import { RuntimeError, type RuntimeWorker } from '../types.js';
import { engineError, reasonOf } from './engine-errors.js';

export interface DockerTiersOptions {
  docker: Dockerode;
  checkpointer?: GpuCheckpointer | undefined;
  /** The ids of the worker's containers (normally one). */
  containerIds: (workerId: string) => Promise<string[]>;
  /** The engine's address, for messages. */
  address: string;
  /** Where suspended workers' GPU memory is kept; none: adopted suspended workers do not know it. */
  records?: SuspendRecords | undefined;
}

/** How long the driver may take to say a process's state when a listing asks (adoption after a restart). */
const STATE_DEADLINE_MS = 5_000;

/** The engine's answer to a pause of a paused container, or an unpause of a running one: nothing to do. */
function alreadyThere(error: unknown): boolean {
  return /is (already )?paused|is not paused/i.test(reasonOf(error));
}

export class DockerIdleTiers extends CheckpointSteps implements IdleTiers {
  readonly #o: DockerTiersOptions;
  /** Worker id -> whether the driver said one of its processes is checkpointed (refine asks it once). */
  readonly #driverSaid = new Map<string, boolean>();

  constructor(options: DockerTiersOptions) {
    super(options.checkpointer);
    this.#o = options;
  }

  async freeze(workerId: string): Promise<void> {
    for (const id of await this.#ids(workerId)) await this.#call(id, workerId, 'pause');
  }

  async thaw(workerId: string): Promise<void> {
    for (const id of await this.#ids(workerId)) await this.#call(id, workerId, 'unpause');
    this.#o.records?.delete(workerId);
    this.#driverSaid.delete(workerId);
  }

  async suspend(workerId: string, options: { deadlineMs: number }): Promise<SuspendedState> {
    const state = await this.suspendWorker(this.#worker(workerId), options.deadlineMs);
    try {
      this.#o.records?.write(workerId, state.gpuBytes);
    } catch {
      // The suspend itself worked: adopted after a restart, the worker knows no GPU memory (docs/workers.md).
    }
    return state;
  }

  /** The worker is gone: so is its record. */
  forget(workerId: string): void {
    this.#o.records?.delete(workerId);
    this.#driverSaid.delete(workerId);
  }

  restore(workerId: string, options: { deadlineMs: number }): Promise<void> {
    return this.restoreWorker(this.#worker(workerId), options.deadlineMs);
  }

  #worker(workerId: string) {
    return {
      thaw: () => this.thaw(workerId),
      freeze: () => this.freeze(workerId),
      pids: () => this.#pids(workerId),
    };
  }

  /**
   * A listed frozen worker is suspended where the driver holds one of its processes checkpointed. Only a worker with
   * a suspend record is asked, once (until its next thaw or suspend): asked of a paused process that still holds its
   * GPU state, the driver never answers (seen on the H200), so asking would hold every listing for the deadline.
   */
  async refine(worker: RuntimeWorker): Promise<RuntimeWorker> {
    if (worker.tier !== 'frozen' || !this.suspendable.available) return worker;
    const { records } = this.#o;
    const gpuBytes = records?.read(worker.workerId);
    if (records && !gpuBytes) return worker;
    let suspended = this.#driverSaid.get(worker.workerId);
    if (suspended === undefined) {
      try {
        suspended = await this.anyCheckpointed(await this.#pids(worker.workerId), STATE_DEADLINE_MS);
      } catch {
        // No answer (the driver answers of a paused process late or never): the record, written only after a
        // checkpoint, stands; without records the worker stays frozen.
        suspended = gpuBytes !== undefined;
      }
      this.#driverSaid.set(worker.workerId, suspended);
    }
    if (!suspended) return worker;
    return { ...worker, tier: 'suspended', ...(gpuBytes ? { suspendedGpuBytes: gpuBytes } : {}) };
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
