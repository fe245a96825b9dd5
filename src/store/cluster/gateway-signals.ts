/**
 * The `gateway_signals` table: each replica's gateway queue and worker load per endpoint, written by that replica
 * when they change, read and summed by the leader's autoscaler (cluster/cluster-signals.ts). Times are the
 * database's clock: a replica writes its oldest request's age and the database turns it into a time, so that the
 * replicas' own clocks need not agree.
 */
import { type Kysely, sql } from 'kysely';
import type { Database, DialectName } from '../schema.js';
import { databaseNow } from './database-clock.js';

/** One worker's load as one replica's gateway sees it. */
export interface WorkerLoadSignal {
  inFlight: number;
  /** How long ago it was last busy (ms; 0 while busy, and for a worker only strict requests wait for). */
  idleMs: number;
  /** Strict requests waiting here for this worker alone (gateway/affinity.ts); absent: none. */
  waiting?: number;
  /** Some of them are strict-resume: the worker is to be woken. */
  resume?: boolean;
}

/** What a replica writes for one endpoint. */
export interface GatewaySignalWrite {
  endpointId: string;
  queueLength: number;
  /** How long its oldest queued request has waited (ms); null with an empty queue. */
  oldestWaitMs: number | null;
  workers: Record<string, WorkerLoadSignal>;
}

/** What the leader reads: times on the database's clock, with that clock at the read. */
export interface GatewaySignalRow {
  replicaId: string;
  endpointId: string;
  queueLength: number;
  oldestEnqueuedAt: number | null;
  /** Per worker: in flight, when last busy (database clock), and the strict requests waiting for it alone. */
  workers: Record<string, { inFlight: number; lastBusyAt: number; waiting?: number; resume?: boolean }>;
  updatedAt: number;
}

export class GatewaySignalRepository {
  readonly #db: Kysely<Database>;
  readonly #dialect: DialectName;

  constructor(options: { db: Kysely<Database>; dialect: DialectName }) {
    this.#db = options.db;
    this.#dialect = options.dialect;
  }

  /** Writes the replica's rows for these endpoints and deletes its rows of `gone` endpoints, in one transaction. */
  async write(
    replicaId: string,
    rows: readonly GatewaySignalWrite[],
    gone: readonly string[],
  ): Promise<void> {
    const now = databaseNow(this.#dialect);
    await this.#db.transaction().execute(async (trx) => {
      if (gone.length > 0) {
        await trx
          .deleteFrom('gateway_signals')
          .where('replica_id', '=', replicaId)
          .where('endpoint_id', 'in', gone)
          .execute();
      }
      for (const row of rows) {
        const wait = row.oldestWaitMs;
        const values = {
          queue_length: row.queueLength,
          oldest_enqueued_at: wait === null ? null : sql<number>`${now} - ${Math.round(wait)}`,
          workers: JSON.stringify(row.workers),
          updated_at: now,
        };
        await trx
          .insertInto('gateway_signals')
          .values({ replica_id: replicaId, endpoint_id: row.endpointId, ...values })
          .onConflict((oc) => oc.columns(['replica_id', 'endpoint_id']).doUpdateSet(values))
          .execute();
      }
    });
  }

  /**
   * Every row of the replicas in `replicaIds` (the live ones, but this one), or only their rows of `endpointId`,
   * with the database's clock at the read.
   */
  async read(
    replicaIds: readonly string[],
    endpointId?: string,
  ): Promise<{ rows: GatewaySignalRow[]; now: number }> {
    // Both at once, and awaited together: a clock query left pending while the other failed would reject with
    // nobody listening, which ends the process (seen when PostgreSQL stopped).
    const [clock, rows] = await Promise.all([
      this.#db.selectNoFrom(databaseNow(this.#dialect).as('now')).executeTakeFirstOrThrow(),
      replicaIds.length === 0
        ? Promise.resolve([])
        : this.#db
            .selectFrom('gateway_signals')
            .selectAll()
            .where('replica_id', 'in', replicaIds)
            .$if(endpointId !== undefined, (q) => q.where('endpoint_id', '=', endpointId ?? ''))
            .execute(),
    ]);
    return {
      now: Number(clock.now),
      rows: rows.map((r) => {
        const updatedAt = Number(r.updated_at);
        const loads = JSON.parse(r.workers) as Record<string, WorkerLoadSignal>;
        const workers: GatewaySignalRow['workers'] = {};
        for (const [id, load] of Object.entries(loads)) {
          workers[id] = {
            inFlight: load.inFlight,
            lastBusyAt: updatedAt - load.idleMs,
            ...(load.waiting ? { waiting: load.waiting, resume: load.resume === true } : {}),
          };
        }
        return {
          replicaId: r.replica_id,
          endpointId: r.endpoint_id,
          queueLength: Number(r.queue_length),
          oldestEnqueuedAt: r.oldest_enqueued_at === null ? null : Number(r.oldest_enqueued_at),
          workers,
          updatedAt,
        };
      }),
    };
  }

  /** Rows of replicas that have no heartbeat row any more (pruned or stopped) go. */
  async prune(): Promise<void> {
    await this.#db
      .deleteFrom('gateway_signals')
      .where('replica_id', 'not in', this.#db.selectFrom('replicas').select('id'))
      .execute();
  }

  /** A replica that stops takes its rows with it. */
  async removeReplica(replicaId: string): Promise<void> {
    await this.#db.deleteFrom('gateway_signals').where('replica_id', '=', replicaId).execute();
  }
}
