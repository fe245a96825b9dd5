/**
 * What the jobs side says when jobs end or go back to the queue, one place for every path that changes them (a
 * worker's result, a timeout, a cancel, a lost or ended worker, an http job's delivery): the long polls waiting on
 * each job wake, the queue's takes wake, and the events go out (webhooks and metrics on `finished`, the autoscaler
 * on `queued`, the metrics on `retried`).
 */
import type { Job } from '../domain/job.js';
import type { Requeued } from '../store/jobs/jobs.js';
import { type JobEvents, wakeKey } from './job-events.js';
import type { Wakeups } from './wakeups.js';

/** Who hears: this process's long polls and the event listeners. */
export interface JobListeners {
  wakeups: Wakeups;
  events: JobEvents;
}

/**
 * A job reached a terminal status. `stopWorker`: it ended while a worker held it (a timeout, a cancel), and that
 * worker's stop channel is woken to tell it.
 */
export function announceEnded(to: JobListeners, job: Job, stopWorker = false): void {
  to.wakeups.wake(wakeKey.job(job.id));
  if (stopWorker && job.workerId !== null) to.wakeups.wake(wakeKey.stops(job.workerId));
  to.events.emit('finished', { job });
}

/**
 * Jobs went back to the queue (those at the attempt limit FAILED, and ended). Those whose take was not counted as an
 * attempt (the worker never had them) are queued again but not counted as retried.
 */
export function announceRequeued(to: JobListeners, result: Requeued): void {
  for (const job of result.failed) announceEnded(to, job);
  for (const id of result.requeued) to.wakeups.wake(wakeKey.job(id));
  for (const endpointId of result.endpoints) {
    to.wakeups.wake(wakeKey.queue(endpointId));
    to.events.emit('queued', { endpointId, lowPriority: false });
    const count = result.retried[endpointId] ?? 0;
    if (count > 0) to.events.emit('retried', { endpointId, count });
  }
}
