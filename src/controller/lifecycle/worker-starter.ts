/**
 * Starts a placed worker: pending -> pulling (its endpoint's image is prepared once, then its create's progress)
 * -> starting (its container runs; probed until it answers), or failed when the create fails. Every move goes
 * through the worker lifecycle; a worker drained or removed while its create was under way is not brought back.
 */
import type { Endpoint, EnvVar } from '../../domain/endpoint.js';
import { awaitedHealth } from '../../domain/health-path.js';
import type { WorkerErrorCode, WorkerState } from '../../domain/worker.js';
import type { Gpu } from '../../gpu/inventory.js';
import { RuntimeError, type WorkerRuntime } from '../../runtime/types.js';
import type { StartImageCheck } from '../controller-options.js';
import { failedEvent } from '../crashes/crash-event.js';
import type { HealthProber } from '../health/health-prober.js';
import { isRuntimeUnreachable, type RuntimeOutage } from '../runtime-outage.js';
import { progressState } from '../runtime-wait.js';
import type { ImagePreparer } from '../workers/image-preparer.js';
import type { ManagedWorker } from '../workers/managed-worker.js';
import { buildWorkerSpec, type RevealCredentials, registryAuthFor } from '../workers/worker-spec.js';
import type { WorkerLifecycle, WorkerLifecycleOptions } from './worker-lifecycle.js';

/** What it shares with the lifecycle (the book, the GPU ledger, the crash ledger, the logger, the clock, poke). */
type Shared = Pick<
  WorkerLifecycleOptions,
  'book' | 'gpus' | 'crashes' | 'logger' | 'clock' | 'poke' | 'metrics'
>;

export interface WorkerStarterOptions extends Shared {
  lifecycle: WorkerLifecycle;
  images: Pick<ImagePreparer, 'ready'>;
  runtime: Pick<WorkerRuntime, 'create' | 'name'>;
  prober: Pick<HealthProber, 'schedule'>;
  outage: Pick<RuntimeOutage, 'failed'>;
  /** Runtime listings begun so far (a create records the number when it completes). */
  listings: () => number;
  storagePaths: ReadonlyMap<string, string>;
  revealCredentials: RevealCredentials;
  installationId?: string | undefined;
  readOnlyStorages?: ReadonlySet<string> | undefined;
  memoryGBPerGpu?: number | undefined;
  imageAccess?: StartImageCheck | undefined;
  resolveEnv?:
    | ((ownerId: string, env: Readonly<Record<string, string>>) => Promise<Record<string, string>>)
    | undefined;
  /** The worker protocol's variables of a queue endpoint's worker. */
  protocolEnv?: ((endpointId: string, workerId: string) => EnvVar[]) | undefined;
  /** The machine's hub cache directory, where an endpoint's models are mounted from. */
  modelHubDir?: string | undefined;
}

/** The states of a create under way: its progress moves the worker among them, and only while it is in one. */
const CREATING: ReadonlySet<WorkerState> = new Set(['pending', 'pulling', 'starting']);

export class WorkerStarter {
  readonly #o: WorkerStarterOptions;

  constructor(options: WorkerStarterOptions) {
    this.#o = options;
  }

  async start(
    record: ManagedWorker,
    endpoint: Endpoint,
    { gpus, productId }: { gpus: Gpu[]; productId?: string | undefined },
    now: number,
  ): Promise<void> {
    const { lifecycle } = this.#o;
    record.gpuUuids = gpus.map((g) => g.uuid);
    record.inRuntime = true;
    record.placedAt = this.#o.clock();
    this.#progress(record, 'pulling', 'preparing the image');
    this.#o.gpus.createStarted(record.id, record.gpuUuids);
    try {
      // The image is pulled once per endpoint image, before any worker needs it: a start waits for that pull.
      await this.#o.images.ready(endpoint, (progress) => this.#progress(record, 'pulling', progress.message));
      await this.#checkImageAccess(endpoint);
      record.pulledAt = this.#o.clock();
      const spec = await this.#spec(endpoint, record, gpus, productId);
      // The runtime's message already names the image and the percentage, or the scheduler's reason to wait.
      const container = await this.#o.runtime.create(spec, (progress) =>
        this.#progress(record, progressState(progress.phase), progress.message),
      );
      if (!this.#o.book.has(record.id)) {
        // Removed while it was being created (scaled down, stopped): nothing must be left behind, and its GPUs
        // stay held until the container is gone.
        void lifecycle.removals.removeContainer(
          record.id,
          record.gpuUuids,
          'its worker was removed while starting',
        );
        return;
      }
      lifecycle.created(record.id, this.#o.listings());
      record.address = container.address ?? null;
      // Drained while it was being created: its drain removes the container; it is not brought back.
      if (!CREATING.has(record.state)) return;
      record.startedAt = this.#o.clock();
      lifecycle.move(record, {
        state: 'starting',
        message: `waiting for ${awaitedHealth(endpoint.spec)}`,
      });
      this.#o.metrics?.starts.inc({ runtime: this.#o.runtime.name });
      lifecycle.log.started(record, this.#o.crashes.of(record.endpointId));
      this.#o.prober.schedule(record.id, endpoint.spec.health.initialDelaySeconds * 1000);
    } catch (error) {
      this.#failed(record, error, now);
    } finally {
      this.#o.gpus.createEnded(record.id);
      this.#o.poke(record.endpointId);
    }
  }

  /** A create's progress moves the worker only while it is being created (not once it is drained or failed). */
  #progress(record: ManagedWorker, state: WorkerState, message: string): void {
    if (CREATING.has(record.state)) this.#o.lifecycle.move(record, { state, message });
  }

  async #spec(endpoint: Endpoint, record: ManagedWorker, gpus: Gpu[], productId: string | undefined) {
    const registryAuth = registryAuthFor(endpoint, this.#o.revealCredentials);
    const { memoryGBPerGpu, installationId, readOnlyStorages, protocolEnv } = this.#o;
    const protocol =
      endpoint.spec.type === 'queue' && protocolEnv ? protocolEnv(endpoint.id, record.id) : undefined;
    const built = buildWorkerSpec(endpoint, record, gpus, {
      ...(protocol ? { protocolEnv: protocol } : {}),
      storagePaths: this.#o.storagePaths,
      ...(installationId === undefined ? {} : { installationId }),
      ...(readOnlyStorages ? { readOnlyStorages } : {}),
      ...(registryAuth ? { registryAuth } : {}),
      ...(memoryGBPerGpu === undefined ? {} : { memoryGBPerGpu }),
      ...(productId === undefined ? {} : { productId }),
      ...(this.#o.modelHubDir === undefined ? {} : { modelHubDir: this.#o.modelHubDir }),
    });
    // Secrets are resolved only here, into the spec handed to the runtime: never stored, never logged.
    const { resolveEnv } = this.#o;
    return resolveEnv ? { ...built, env: await resolveEnv(endpoint.ownerId, built.env) } : built;
  }

  #failed(record: ManagedWorker, error: unknown, now: number): void {
    const { lifecycle } = this.#o;
    const code: WorkerErrorCode =
      error instanceof RuntimeError && error.code === 'IMAGE_PULL_FAILED'
        ? 'IMAGE_PULL_FAILED'
        : 'RUNTIME_ERROR';
    const message = error instanceof Error ? error.message : String(error);
    // An engine that cannot be reached is an outage, not the endpoint's failure: it counts toward no crash loop, and
    // the outage's own line says it (once), not a line per worker.
    const unreachable = isRuntimeUnreachable(error);
    if (unreachable) this.#o.outage.failed(error, this.#o.clock());
    else this.#o.crashes.record(record.endpointId, { code, message, at: now });
    lifecycle.fail(record, code, message);
    const event = failedEvent(record.id, code, message, this.#o.clock());
    if (unreachable) lifecycle.pushEvent(record.endpointId, event);
    else lifecycle.failureEvent(record, event);
    // A failed create leaves nothing behind, except where the engine could not be reached to clean up: its GPUs
    // are free once a removal (idempotent, cheap when there is nothing) has confirmed that.
    void lifecycle.removals.removeContainer(record.id, record.gpuUuids, 'its create failed');
  }

  /** As Kubernetes' AlwaysPullImages: an image already here is still the owner's to run only if the registry says so. */
  async #checkImageAccess(endpoint: Endpoint): Promise<void> {
    const check = this.#o.imageAccess;
    if (!check) return;
    const { ref, authId } = endpoint.spec.image;
    const verdict = await check({ ownerId: endpoint.ownerId, authId, image: ref });
    if (!verdict.allowed) throw new RuntimeError('IMAGE_PULL_FAILED', verdict.message);
  }
}
