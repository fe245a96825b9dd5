/**
 * When each queue worker last polled or pinged, kept in the store (a worker may reach any replica; the leader's
 * controller asks) and written at most once per `writeEveryMs` per worker by this process. A queue worker's health
 * is this: ready once it has polled, unhealthy once it has been silent for `silentAfterMs`.
 */
import type { Clock } from '../ports/clock.js';
import type { WorkerContactStore } from '../store/jobs/job-roles.js';
import type { JobsLogger } from './http-io.js';

/** A queue worker's health as its contacts say it. */
export type WorkerContactVerdict =
  | { healthy: true }
  | { healthy: false; reason: 'never-polled' | 'silent'; silentMs?: number };

export interface WorkerContactsOptions {
  jobs: WorkerContactStore;
  clock: Clock;
  logger: JobsLogger;
  writeEveryMs: number;
  silentAfterMs: number;
}

export class WorkerContacts {
  readonly #o: WorkerContactsOptions;
  /** When this process last wrote each worker's contact. */
  readonly #written = new Map<string, number>();

  constructor(options: WorkerContactsOptions) {
    this.#o = options;
  }

  /** The worker polled or pinged now. */
  seen(endpointId: string, workerId: string): void {
    const now = this.#o.clock();
    const last = this.#written.get(workerId);
    if (last !== undefined && now - last < this.#o.writeEveryMs) return;
    this.#written.set(workerId, now);
    this.#o.jobs.workerSeen(workerId, endpointId, now).catch((error: unknown) => {
      this.#written.delete(workerId);
      this.#o.logger.warn(
        { workerId, err: error instanceof Error ? error.message : String(error) },
        'worker contact not stored',
      );
    });
  }

  async verdict(workerId: string): Promise<WorkerContactVerdict> {
    const seenAt = await this.#o.jobs.workerSeenAt(workerId);
    if (seenAt === undefined) return { healthy: false, reason: 'never-polled' };
    const silentMs = this.#o.clock() - seenAt;
    return silentMs > this.#o.silentAfterMs
      ? { healthy: false, reason: 'silent', silentMs }
      : { healthy: true };
  }
}
