/**
 * A worker's way out once it is chosen for removal or has failed: drained, then `stopped` and its container removed
 * (a frozen or suspended one thawed first), then forgotten; a removal that failed leaves it `failed`, retried by
 * later passes. Its GPUs stay held (the GPU ledger) until the runtime has removed its container; its last output is
 * kept (output-keeper.ts), and a failure waiting to be told is logged once the end of that output is read. The
 * state moves themselves are the lifecycle's (worker-lifecycle.ts).
 */
import type { WorkerRuntime } from '../../runtime/types.js';
import type { ControllerLogger } from '../controller-options.js';
import type { OutputKeeper } from '../output/output-keeper.js';
import type { GpuLedger } from '../placement/gpu-ledger.js';
import { runtimeErrorFields } from '../runtime-outage.js';
import type { ManagedWorker } from '../workers/managed-worker.js';
import type { WorkerBook } from '../workers/worker-book.js';
import type { WorkerLifecycle } from './worker-lifecycle.js';
import type { FailureNote, WorkerLog } from './worker-log.js';

export interface WorkerRemovalsOptions {
  book: WorkerBook;
  gpus: GpuLedger;
  runtime: Pick<WorkerRuntime, 'remove' | 'idleTiers'>;
  logger: ControllerLogger;
  /** Where failures are told (the lifecycle's log). */
  log: Pick<WorkerLog, 'failed'>;
  /** The moves of a worker on its way out, and forgetting it once gone. */
  lifecycle: Pick<WorkerLifecycle, 'move' | 'forget'>;
  /** Asks for a reconcile of the endpoint (undefined: of every endpoint, the whole pass). */
  poke: (endpointId?: string) => void;
  awaitDrained?: ((endpointId: string, workerId: string) => Promise<void>) | undefined;
  outputs?: Pick<OutputKeeper, 'begin'> | undefined;
  /** Told once a drained worker's container is gone (the lifecycle tells the earlier steps). */
  onEnded?: ((endpointId: string, workerId: string, reason: string) => void) | undefined;
}

export class WorkerRemovals {
  readonly #o: WorkerRemovalsOptions;
  /** Failures not told yet: told once the end of the worker's output is read, as its container goes. */
  readonly #failureNotes = new Map<string, FailureNote>();

  constructor(options: WorkerRemovalsOptions) {
    this.#o = options;
  }

  /** A failure to tell in the log once the worker's container is removed (removeContainer). */
  noteFailure(workerId: string, note: FailureNote): void {
    this.#failureNotes.set(workerId, note);
  }

  /**
   * After the worker's drain (its requests finished, or the drain failed): stopped, its container removed and the
   * worker forgotten, while `stillWanted` (an owner may undrain meanwhile).
   */
  async removeOnceDrained(record: ManagedWorker, reason: string, stillWanted: () => boolean): Promise<void> {
    try {
      await (this.#o.awaitDrained?.(record.endpointId, record.id) ?? Promise.resolve());
    } catch (error) {
      // Requests still in flight fail with the worker; it must go all the same.
      this.#o.logger.warn({ err: error, workerId: record.id }, 'drain failed; removing the worker anyway');
    }
    if (!stillWanted()) return;
    const { lifecycle } = this.#o;
    lifecycle.move(record, { state: 'stopped', message: `drained (${reason}); removing its container` });
    const error = await this.removeContainer(record.id, record.gpuUuids, reason);
    if (!error) {
      this.#o.onEnded?.(record.endpointId, record.id, reason);
      lifecycle.forget(record);
      return;
    }
    // The GPUs stay held by the removal, which later passes retry.
    lifecycle.move(record, {
      state: 'failed',
      message: `could not be removed: ${error.message}`,
      error: 'RUNTIME_ERROR',
    });
  }

  /**
   * Removes the worker's container. Its GPUs stay held (the GPU ledger) until the runtime has removed it: the
   * container runs on them through the grace period. Resolves to the error when the removal failed (retried by later
   * passes).
   */
  async removeContainer(workerId: string, gpuUuids: string[], reason: string): Promise<Error | undefined> {
    const { gpus } = this.#o;
    // Its endpoint's reconcile places what waited for the GPUs freed (placement looks at every endpoint).
    const endpointId = this.#o.book.get(workerId)?.endpointId;
    gpus.releaseStarted(workerId, gpuUuids);
    const keep = this.#o.outputs ? await this.#keepOutput(this.#o.outputs, workerId, reason) : undefined;
    try {
      await this.#thawBeforeRemoval(workerId);
      await this.#o.runtime.remove(workerId);
      this.#released(workerId);
      return undefined;
    } catch (error) {
      gpus.releaseFailed(workerId);
      this.#o.logger.warn({ ...runtimeErrorFields(error), workerId, reason }, 'cannot remove worker');
      return error instanceof Error ? error : new Error(String(error));
    } finally {
      this.#tellFailure(workerId, keep?.() ?? Promise.resolve([]));
      this.#o.poke(endpointId);
    }
  }

  /**
   * A removal that failed is tried again while its container is listed; once it is not, its GPUs are free. Only
   * workers `listed` covers are judged: a listing of one endpoint says nothing of another's containers.
   */
  retry(seen: ReadonlySet<string>, listed: (workerId: string) => boolean = () => true): void {
    for (const [workerId, gpuUuids] of this.#o.gpus.toRetry()) {
      if (!listed(workerId)) continue;
      if (seen.has(workerId)) void this.removeContainer(workerId, gpuUuids, 'retrying its removal');
      else this.#released(workerId);
    }
  }

  /** The worker's failure, if one is waiting to be told, with the end of its output once that is read. */
  #tellFailure(workerId: string, output: Promise<readonly string[]>): void {
    const note = this.#failureNotes.get(workerId);
    if (!note) return;
    this.#failureNotes.delete(workerId);
    void output.then((lines) => this.#o.log.failed(note, lines));
  }

  /**
   * A frozen or suspended worker is thawed before its removal: a stopped process would take its stop signal only
   * at its grace period's end (SIGKILL). Its failure is the removal's to meet.
   */
  async #thawBeforeRemoval(workerId: string): Promise<void> {
    const record = this.#o.book.get(workerId);
    const tiers = this.#o.runtime.idleTiers;
    if (record?.tierSince === undefined || !tiers) return;
    try {
      await tiers.thaw(workerId);
    } catch (error) {
      this.#o.logger.warn(
        { ...runtimeErrorFields(error), workerId },
        'cannot thaw worker before its removal',
      );
    }
  }

  /** Starts keeping the last output of a worker about to be removed (output-keeper.ts); the result ends it. */
  async #keepOutput(
    keeper: Pick<OutputKeeper, 'begin'>,
    workerId: string,
    reason: string,
  ): Promise<(() => Promise<string[]>) | undefined> {
    const record = this.#o.book.get(workerId);
    if (!record) return undefined;
    const failed = record.state === 'failed';
    return keeper.begin({
      workerId,
      endpointId: record.endpointId,
      failed,
      reason: failed ? record.message : reason,
    });
  }

  /** The container is gone: its GPUs are free, and a failed record shown in the API no longer names them. */
  #released(workerId: string): void {
    this.#o.gpus.released(workerId);
    const record = this.#o.book.get(workerId);
    if (record?.state === 'failed' && record.gpuUuids.length > 0) {
      record.gpuUuids = [];
      this.#o.book.markDirty(record);
    }
  }
}
