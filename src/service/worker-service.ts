/**
 * What an owner may do to one of its workers through the API: drain it or undrain it (`POST
 * endpoint/worker/drain`). The flag is stored with the worker, with an audit entry; the controller acts on it.
 */
import type { Worker } from '../domain/worker.js';
import { ApiError } from '../errors/api-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { Store } from '../store/store.js';
import type { Principal } from './principal.js';

export interface WorkerServiceOptions {
  store: Pick<Store, 'workers'>;
  clock: Clock;
  /** Told after every drain or undrain, so that the controller acts at once rather than at its next tick. */
  onChanged?: () => void;
}

export class WorkerService {
  readonly #o: WorkerServiceOptions;

  constructor(options: WorkerServiceOptions) {
    this.#o = options;
  }

  /** Drains (`drain`) or undrains one of the caller's workers; another owner's or an unknown one is not found. */
  async setDrain(principal: Principal, workerId: string, drain: boolean): Promise<Worker> {
    const { store, clock } = this.#o;
    const worker = await store.workers.requestDrain(principal.ownerId, workerId, drain, {
      at: clock(),
      ownerId: principal.ownerId,
      actor: principal.keyId,
      action: drain ? 'worker.drain' : 'worker.undrain',
      targetId: workerId,
    });
    if (!worker) throw new ApiError('WORKER_NOT_FOUND', `you have no worker "${workerId}"`, { workerId });
    this.#o.onChanged?.();
    return worker;
  }
}
