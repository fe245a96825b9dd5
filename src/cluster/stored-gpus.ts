/**
 * `StoredGpus`: the GPUs' holders as the `workers` rows say (gpu-holds.ts), for a replica that does not lead
 * (several replicas on PostgreSQL, docs/operations.md). `GET products` asks for the held GPUs synchronously (its
 * validation paths too), so a view read every `intervalMs` is kept; `GET gpus` reads the rows when asked, which also
 * renews that view. `replicaGpus` picks, at each call, the leader's controller (its own view, the freshest: it
 * counts creates and removals under way) once its first pass has adopted the workers, or else these rows.
 */
import type { Timers } from '../ports/clock.js';
import type { GpuInventorySource, GpuSnapshot, InventoryGpu, PlacedWorker } from '../service/gpu-report.js';
import type { WorkerRepository } from '../store/workers/workers.js';
import { type GpuHolds, gpuHoldsOf, NO_GPU_HOLDS } from './gpu-holds.js';

/** The rows are read this often: a follower's `gpusFree` lags them by at most this and one read. */
export const STORED_GPUS_INTERVAL_MS = 1_000;

export interface StoredGpusOptions {
  workers: Pick<WorkerRepository, 'listHoldingOrWaiting'>;
  /** Reads every interval after `start`; none: only on demand (`read`). */
  intervalMs?: number;
  timers: Timers;
  logger: { info(fields: object, message: string): void; warn(fields: object, message: string): void };
}

export class StoredGpus {
  readonly #o: StoredGpusOptions;
  #holds: GpuHolds = NO_GPU_HOLDS;
  /** Reads are numbered as they start; one that ends after a later one changes nothing. */
  #started = 0;
  #applied = 0;
  #timer: unknown;
  #reading: Promise<void> | undefined;
  #stopped = false;
  #failing = false;

  constructor(options: StoredGpusOptions) {
    this.#o = options;
  }

  /** The first read, awaited (a database that refuses it fails the start); then one every interval, if any. */
  async start(): Promise<void> {
    await this.read();
    this.#schedule();
  }

  /** Resolves once the interval's read under way (if any) has ended. */
  async settled(): Promise<void> {
    await this.#reading;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#o.timers.clearTimeout(this.#timer);
    await this.#reading;
  }

  /** The view of the last read (empty before the first). */
  holds(): GpuHolds {
    return this.#holds;
  }

  /** Reads the rows now; the view kept follows unless a read started later has already ended. */
  async read(): Promise<GpuHolds> {
    const number = ++this.#started;
    const holds = gpuHoldsOf(await this.#o.workers.listHoldingOrWaiting());
    if (number > this.#applied) {
      this.#applied = number;
      this.#holds = holds;
    }
    return holds;
  }

  #schedule(): void {
    const { intervalMs } = this.#o;
    if (this.#stopped || intervalMs === undefined) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#reading = this.#refresh().finally(() => {
        this.#reading = undefined;
        this.#schedule();
      });
    }, intervalMs);
  }

  async #refresh(): Promise<void> {
    try {
      await this.read();
      if (this.#failing) this.#o.logger.info({}, 'GPU holders read again from the workers table');
      this.#failing = false;
    } catch (error) {
      // Said once while it lasts; the last view stays (the database is down or refuses).
      if (!this.#failing) {
        this.#o.logger.warn({ err: error }, 'cannot read the GPU holders; the last read is shown');
      }
      this.#failing = true;
    }
  }
}

/** What the leader's controller tells of the GPUs (controller.ts `heldGpus`, `workers`). */
export interface ControllerGpus {
  /** Whether its first pass has adopted the runtime's workers (a term's fresh controller knows none before). */
  readonly adopted: boolean;
  workers(): readonly PlacedWorker[];
  heldGpus(): ReadonlyMap<string, string>;
}

export interface ReplicaGpusOptions {
  gpus: readonly InventoryGpu[];
  /** Whether this replica runs the controller now. */
  leading: () => boolean;
  /** This term's controller (a fresh one each term). */
  controller: () => ControllerGpus;
  /** The rows' view; none (one process, SQLite): the controller's view always. */
  stored?: StoredGpus;
}

/**
 * `GET products`' held GPUs and `GET gpus`' source: the controller's view where it leads (and has adopted the
 * workers), else the rows'.
 */
export function replicaGpus(options: ReplicaGpusOptions): {
  busyGpus: () => ReadonlySet<string>;
  gpuInventory: GpuInventorySource;
} {
  const { gpus, leading, controller, stored } = options;
  // A leader whose controller has not adopted the workers yet (just elected) shows the rows its predecessor left.
  const rows = (): StoredGpus | undefined =>
    stored && !(leading() && controller().adopted) ? stored : undefined;
  const snapshot = (holds: GpuHolds): GpuSnapshot => ({
    gpus: [...gpus],
    workers: [...holds.workers],
    held: holds.held,
  });
  return {
    busyGpus: () => new Set((rows()?.holds().held ?? controller().heldGpus()).keys()),
    gpuInventory: {
      snapshot: () => {
        const follower = rows();
        if (follower) return follower.read().then(snapshot);
        const own = controller();
        return snapshot({ workers: [...own.workers()], held: own.heldGpus() });
      },
    },
  };
}
