/**
 * Owners' drains (`POST endpoint/worker/drain`): the workers their owners drained since the last pass are drained
 * through the worker lifecycle, and those undrained before their removal began are put back as they were.
 */

import { isInTier } from '../../domain/worker.js';
import type { ControllerLogger } from '../controller-options.js';
import { isActive } from '../workers/managed-worker.js';
import type { WorkerBook } from '../workers/worker-book.js';
import type { WorkerLifecycle } from './worker-lifecycle.js';

export interface OwnerDrainsOptions {
  book: WorkerBook;
  lifecycle: WorkerLifecycle;
  logger: ControllerLogger;
}

export class OwnerDrains {
  readonly #o: OwnerDrainsOptions;
  /**
   * Workers draining because their owner asked, and whether each was serving then: an undrain before its removal
   * puts it back as it was. The entry's identity tells a drain from a later one.
   */
  readonly #drains = new Map<string, { wasServing: boolean }>();

  constructor(options: OwnerDrainsOptions) {
    this.#o = options;
  }

  /**
   * A drained worker leaves routing at once, finishes its requests and is removed as a scale-down victim is; it
   * stops counting towards the endpoint's workers, so the plan starts a replacement (and a scale-down that follows,
   * as waverless's does, removes the replacement first, since it is the newest and not serving yet). A frozen or
   * suspended worker serves nothing: it is removed at once, and an undrain cannot bring it back.
   */
  apply(requested: ReadonlySet<string>): void {
    for (const workerId of requested) {
      const record = this.#o.book.get(workerId);
      if (record && isInTier(record.state) && record.tierCall === undefined) {
        this.#o.lifecycle.drainAndRemove(record, 'drained by its owner');
        continue;
      }
      if (!record || !isActive(record)) continue;
      const drain = { wasServing: record.state === 'running' && record.healthy };
      this.#drains.set(workerId, drain);
      this.#o.lifecycle.drainAndRemove(
        record,
        'drained by its owner',
        () => this.#drains.get(workerId) === drain && record.state === 'draining',
      );
    }
    for (const [workerId, drain] of [...this.#drains]) {
      if (!requested.has(workerId)) this.#undrain(workerId, drain);
    }
  }

  /** The worker is gone: its drain with it. */
  forget(workerId: string): void {
    this.#drains.delete(workerId);
  }

  /** Back into service while still draining; once its removal has begun it goes all the same. */
  #undrain(workerId: string, drain: { wasServing: boolean }): void {
    this.#drains.delete(workerId);
    const record = this.#o.book.get(workerId);
    if (record?.state !== 'draining') return;
    this.#o.lifecycle.undrain(record, drain.wasServing);
    this.#o.lifecycle.log.note(record, 'undrained by its owner');
  }
}
