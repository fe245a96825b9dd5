/**
 * The cluster as `GET cluster` and `corral status` show it (pure): each replica's heartbeat row, whether it is
 * alive (seen within `staleAfterMs` on the database's clock), which one leads under the controller's lease and
 * since when.
 */

import type { Replica } from '../domain/records.js';
import type { Lease } from '../store/cluster/leases.js';

export interface ReplicaStatus extends Replica {
  alive: boolean;
  leader: boolean;
}

export interface ClusterStatus {
  database: 'sqlite' | 'postgres';
  /** The replica that answered. */
  self: string;
  /** Null while no replica holds the lease (none runs the controller). */
  leader: { replicaId: string; since: number; token: number } | null;
  replicas: ReplicaStatus[];
}

export interface ClusterFacts {
  database: 'sqlite' | 'postgres';
  self: string;
  replicas: Replica[];
  lease: Lease | undefined;
  /** The database's clock when the rows were read. */
  now: number;
  staleAfterMs: number;
}

export function clusterStatus(facts: ClusterFacts): ClusterStatus {
  const { lease, now } = facts;
  const held = lease !== undefined && lease.expiresAt > lease.now;
  const leader = held ? { replicaId: lease.holder, since: lease.acquiredAt, token: lease.token } : null;
  return {
    database: facts.database,
    self: facts.self,
    leader,
    replicas: facts.replicas.map((replica) => ({
      ...replica,
      alive: now - replica.lastSeenAt <= facts.staleAfterMs,
      leader: replica.id === leader?.replicaId,
    })),
  };
}
