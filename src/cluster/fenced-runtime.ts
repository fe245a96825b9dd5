/**
 * `FencedRuntime`: the runtime as a leader's controller sees it. Every create and remove first asks the database
 * whether this term's lease is still current and unexpired, and checks the term on this replica's clock again once
 * the answer is in; a deposed leader's call is refused (LeaseLostError) before it reaches the runtime. What a
 * runtime call cannot be given is the token itself (Docker takes none): docs/operations.md says what is left. The
 * runtime's idle tiers (freeze, thaw, suspend, restore) pass through under the same check, so that a leader's
 * controller has them as a lone process's does.
 */
import type { IdleTiers } from '../runtime/idle-tiers.js';
import type {
  ImageRequest,
  LogOptions,
  PullProgress,
  RuntimeEvent,
  RuntimeWorker,
  WorkerRuntime,
  WorkerSpec,
  WorkerStats,
} from '../runtime/types.js';
import { LeaseLostError, type LeaseRepository } from '../store/cluster/leases.js';
import type { TermFence } from './elector.js';

export interface FencedRuntimeOptions {
  runtime: WorkerRuntime;
  fence: TermFence;
  leases: Pick<LeaseRepository, 'holds'>;
}

export class FencedRuntime implements WorkerRuntime {
  readonly #runtime: WorkerRuntime;
  readonly #fence: TermFence;
  readonly #leases: Pick<LeaseRepository, 'holds'>;
  readonly localImage?: WorkerRuntime['localImage'];
  readonly idleTiers?: IdleTiers;

  constructor(options: FencedRuntimeOptions) {
    this.#runtime = options.runtime;
    this.#fence = options.fence;
    this.#leases = options.leases;
    const { localImage, idleTiers } = options.runtime;
    if (localImage) this.localImage = (image) => localImage.call(options.runtime, image);
    if (idleTiers) this.idleTiers = this.#fencedTiers(idleTiers);
  }

  #fencedTiers(tiers: IdleTiers): IdleTiers {
    return {
      get suspendable() {
        return tiers.suspendable;
      },
      freeze: async (workerId) => {
        await this.#check();
        return tiers.freeze(workerId);
      },
      thaw: async (workerId) => {
        await this.#check();
        return tiers.thaw(workerId);
      },
      suspend: async (workerId, options) => {
        await this.#check();
        return tiers.suspend(workerId, options);
      },
      restore: async (workerId, options) => {
        await this.#check();
        return tiers.restore(workerId, options);
      },
    };
  }

  get name(): WorkerRuntime['name'] {
    return this.#runtime.name;
  }

  /** As the runtime says: whether a start may go on without waiting for the endpoint's pre-pull (kubernetes). */
  get createPullsWhereItRuns(): boolean {
    return this.#runtime.createPullsWhereItRuns === true;
  }

  async create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    await this.#check();
    return this.#runtime.create(spec, onProgress);
  }

  async remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    await this.#check();
    return this.#runtime.remove(workerId, options);
  }

  prepareImage(request: ImageRequest, onProgress?: (progress: PullProgress) => void): Promise<void> {
    return this.#runtime.prepareImage(request, onProgress);
  }

  list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    return this.#runtime.list(selector);
  }

  inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    return this.#runtime.inspect(workerId);
  }

  logs(workerId: string, options: LogOptions): AsyncIterable<string> {
    return this.#runtime.logs(workerId, options);
  }

  stats(workerId: string): Promise<WorkerStats | undefined> {
    return this.#runtime.stats(workerId);
  }

  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    return this.#runtime.watch(onEvent);
  }

  /** The runtime is this replica's process's, closed by whoever made it, never by one term. */
  async close(): Promise<void> {}

  /** The term on this replica's clock, then on the database, then on this clock again (the answer took time). */
  async #check(): Promise<void> {
    const claim = this.#fence.claim();
    if (!(await this.#leases.holds(claim))) throw new LeaseLostError(claim);
    this.#fence.claim();
  }
}
