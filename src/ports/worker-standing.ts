/**
 * Where a worker stands, as the jobs side asks the controller (issue 29): whether it may take jobs, and whether its
 * token still holds. The controller's worker states map onto it here, so that the jobs side never reads them.
 */
import type { WorkerState } from '../domain/worker.js';

/**
 * `serving`: it takes jobs. `resting`: frozen or suspended, it takes none until it runs again. `leaving`: chosen for
 * removal (draining, its container being stopped): it takes none, and what it held went back to the queue.
 * `ended`: failed, removed, or never one of Corral's: its token no longer holds.
 */
export type WorkerStanding = 'serving' | 'resting' | 'leaving' | 'ended';

/** The standing of a worker in this state; undefined: no such worker (removed, or never one). */
export function standingOf(state: WorkerState | undefined): WorkerStanding {
  switch (state) {
    case 'pending':
    case 'pulling':
    case 'starting':
    case 'running':
    case 'unhealthy':
      return 'serving';
    case 'frozen':
    case 'suspended':
      return 'resting';
    case 'draining':
    case 'stopped':
      return 'leaving';
    default:
      return 'ended';
  }
}
