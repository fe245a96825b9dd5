/** `ClusterService`: reads the replicas' heartbeats and the controller's lease for `GET cluster`. */
import type { Store } from '../store/store.js';
import { type ClusterStatus, clusterStatus } from './cluster-status.js';

/** The controller's lease's name in the `leases` table. */
export const CONTROLLER_LEASE = 'controller';

export interface ClusterServiceOptions {
  store: Pick<Store, 'replicas' | 'leases' | 'dialect'>;
  /** This replica's id. */
  self: string;
  /** A replica not seen for longer is shown as not alive (three heartbeats). */
  staleAfterMs: number;
}

export class ClusterService {
  readonly #o: ClusterServiceOptions;

  constructor(options: ClusterServiceOptions) {
    this.#o = options;
  }

  get replicaId(): string {
    return this.#o.self;
  }

  async status(): Promise<ClusterStatus> {
    const { store } = this.#o;
    const [{ replicas, now }, lease] = await Promise.all([
      store.replicas.list(),
      store.leases.read(CONTROLLER_LEASE),
    ]);
    return clusterStatus({
      database: store.dialect,
      self: this.#o.self,
      replicas,
      lease,
      now,
      staleAfterMs: this.#o.staleAfterMs,
    });
  }
}
