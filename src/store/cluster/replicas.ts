/**
 * The `replicas` table: one heartbeat row per running `corral serve` (its id, host, start, last beat and its
 * gateway's load), read by `GET /v1/cluster`. Times are the database's clock, shared by every replica.
 */
import type { Kysely } from 'kysely';
import type { Replica, ReplicaBeat } from '../../domain/records.js';
import type { Database, DialectName } from '../schema.js';
import { databaseNow } from './database-clock.js';

export class ReplicaRepository {
  readonly #db: Kysely<Database>;
  readonly #dialect: DialectName;

  constructor(options: { db: Kysely<Database>; dialect: DialectName }) {
    this.#db = options.db;
    this.#dialect = options.dialect;
  }

  /** Writes the replica's row: its start on the first beat, its last beat and load on every one. */
  async beat(replica: ReplicaBeat): Promise<void> {
    const now = databaseNow(this.#dialect);
    const changes = {
      host: replica.host,
      pid: replica.pid,
      api_url: replica.apiUrl,
      last_seen_at: now,
      in_flight: replica.inFlight,
      queued: replica.queued,
      ...(replica.settled === undefined ? {} : { settled: replica.settled }),
      ...(replica.gatewayUrl === undefined ? {} : { gateway_url: replica.gatewayUrl }),
    };
    await this.#db
      .insertInto('replicas')
      .values({ id: replica.id, started_at: now, ...changes })
      .onConflict((oc) => oc.column('id').doUpdateSet(changes))
      .execute();
  }

  /** Every row, oldest start first, with the database's clock at the read. */
  async list(): Promise<{ replicas: Replica[]; now: number }> {
    const [rows, clock] = await Promise.all([
      this.#db.selectFrom('replicas').selectAll().orderBy('started_at').orderBy('id').execute(),
      this.#db.selectNoFrom(databaseNow(this.#dialect).as('now')).executeTakeFirstOrThrow(),
    ]);
    return {
      now: Number(clock.now),
      replicas: rows.map((r) => ({
        id: r.id,
        host: r.host,
        pid: Number(r.pid),
        apiUrl: r.api_url,
        startedAt: Number(r.started_at),
        lastSeenAt: Number(r.last_seen_at),
        inFlight: Number(r.in_flight),
        queued: Number(r.queued),
        settled: r.settled,
        ...(r.gateway_url === null ? {} : { gatewayUrl: r.gateway_url }),
      })),
    };
  }

  /** A replica that stopped cleanly takes its row with it. */
  async remove(id: string): Promise<void> {
    await this.#db.deleteFrom('replicas').where('id', '=', id).execute();
  }

  /** Rows of replicas not seen for `olderThanMs` (killed ones) go. */
  async prune(olderThanMs: number): Promise<void> {
    const now = databaseNow(this.#dialect);
    await this.#db
      .deleteFrom('replicas')
      .where((eb) => eb('last_seen_at', '<', eb(now, '-', olderThanMs)))
      .execute();
  }
}
