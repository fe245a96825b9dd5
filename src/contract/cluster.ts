/** `GET cluster`'s wire body: the replicas and the leader, times as ISO 8601. */
import type { Replica } from '../domain/records.js';

/** The cluster as service/cluster-status.ts reports it (times in epoch ms). */
export interface ClusterReport {
  database: 'sqlite' | 'postgres';
  self: string;
  leader: { replicaId: string; since: number; token: number } | null;
  replicas: (Replica & { alive: boolean; leader: boolean })[];
}

export interface WireCluster {
  database: 'sqlite' | 'postgres';
  self: string;
  leader: { replica: string; since: string; token: number } | null;
  replicas: {
    id: string;
    host: string;
    pid: number;
    apiUrl: string;
    startedAt: string;
    lastSeenAt: string;
    alive: boolean;
    leader: boolean;
    inFlight: number;
    queued: number;
  }[];
}

export function toWireCluster(status: ClusterReport): WireCluster {
  const iso = (at: number) => new Date(at).toISOString();
  return {
    database: status.database,
    self: status.self,
    leader: status.leader && {
      replica: status.leader.replicaId,
      since: iso(status.leader.since),
      token: status.leader.token,
    },
    replicas: status.replicas.map((r) => ({
      id: r.id,
      host: r.host,
      pid: r.pid,
      apiUrl: r.apiUrl,
      startedAt: iso(r.startedAt),
      lastSeenAt: iso(r.lastSeenAt),
      alive: r.alive,
      leader: r.leader,
      inFlight: r.inFlight,
      queued: r.queued,
    })),
  };
}
