/**
 * What the jobs side tells the rest of `corral serve` (wired in app/): a job queued (the autoscaler wakes an
 * endpoint), a job finished (webhooks, the metrics), jobs sent back to the queue for another attempt (the metrics),
 * a take under way and what it handed (the autoscaler counts the worker busy at once), a worker seen polling (it is
 * ready) and a worker to replace (`stopPod`, a stop it ignored). Listeners are called synchronously and must not throw.
 */
import type { Job } from '../domain/job.js';

export interface JobEventMap {
  /** A job was queued (or queued again): `lowPriority` jobs add no worker. */
  queued: { endpointId: string; lowPriority: boolean };
  /** A job reached a terminal status (COMPLETED, FAILED, CANCELLED, TIMED_OUT). */
  finished: { job: Job };
  /** Jobs went back to the queue for another attempt: a client's retry, or their worker was lost or ended. */
  retried: { endpointId: string; count: number };
  /** A worker's take is taking jobs from the queue now (it is busy until `took`). */
  taking: { endpointId: string; workerId: string };
  /** That take ended: `count` jobs handed to the worker (0: none, or they went back at once). */
  took: { endpointId: string; workerId: string; count: number };
  /** A worker asked for a job, or pinged. */
  contact: { endpointId: string; workerId: string };
  /** A worker must be replaced: it asked (`stopPod`) or kept a job it was told to stop. */
  recycle: { endpointId: string; workerId: string; reason: string };
}

type Listener<K extends keyof JobEventMap> = (event: JobEventMap[K]) => void;

export class JobEvents {
  readonly #listeners: { [K in keyof JobEventMap]: Set<Listener<K>> } = {
    queued: new Set(),
    finished: new Set(),
    retried: new Set(),
    taking: new Set(),
    took: new Set(),
    contact: new Set(),
    recycle: new Set(),
  };

  on<K extends keyof JobEventMap>(kind: K, listener: Listener<K>): () => void {
    const set = this.#listeners[kind] as Set<Listener<K>>;
    set.add(listener);
    return () => set.delete(listener);
  }

  emit<K extends keyof JobEventMap>(kind: K, event: JobEventMap[K]): void {
    for (const listener of this.#listeners[kind] as Set<Listener<K>>) listener(event);
  }
}

/** The wake-up keys of the long polls. */
export const wakeKey = {
  job: (jobId: string) => `job:${jobId}`,
  queue: (endpointId: string) => `queue:${endpointId}`,
  stops: (workerId: string) => `stops:${workerId}`,
};
