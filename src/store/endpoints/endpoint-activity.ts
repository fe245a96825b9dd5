/**
 * The `endpoint_activity` table: each endpoint's last traffic (written in batches by every replica's traffic marks,
 * never per request; a write only moves it forward, so replicas' flushes in any order keep the newest) and the last
 * idle-policy step that took effect (written by the leader's idle pass).
 */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../schema.js';

/** What the idle pass reads of one endpoint. */
export interface EndpointActivity {
  trafficAt: number | null;
  idleStep: { index: number; at: number } | null;
}

export class EndpointActivityRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /** Records each endpoint's last traffic; an older time than the stored one changes nothing. One statement. */
  async recordTraffic(marks: ReadonlyMap<string, number>): Promise<void> {
    if (marks.size === 0) return;
    await this.#db
      .insertInto('endpoint_activity')
      .values(
        [...marks].map(([endpointId, at]) => ({
          endpoint_id: endpointId,
          traffic_at: at,
          idle_step: null,
          idle_step_at: null,
        })),
      )
      .onConflict((oc) =>
        oc.column('endpoint_id').doUpdateSet({
          traffic_at: sql<number>`case when endpoint_activity.traffic_at is null or excluded.traffic_at > endpoint_activity.traffic_at then excluded.traffic_at else endpoint_activity.traffic_at end`,
        }),
      )
      .execute();
  }

  /** Records the idle-policy step that took effect on the endpoint at `at`. */
  async recordIdleStep(endpointId: string, index: number, at: number): Promise<void> {
    await this.#db
      .insertInto('endpoint_activity')
      .values({ endpoint_id: endpointId, traffic_at: null, idle_step: index, idle_step_at: at })
      .onConflict((oc) => oc.column('endpoint_id').doUpdateSet({ idle_step: index, idle_step_at: at }))
      .execute();
  }

  /** Every row, by endpoint id (endpoints without one have had neither traffic nor a step). */
  async all(): Promise<Map<string, EndpointActivity>> {
    const rows = await this.#db.selectFrom('endpoint_activity').selectAll().execute();
    return new Map(
      rows.map((r) => [
        r.endpoint_id,
        {
          trafficAt: r.traffic_at === null ? null : Number(r.traffic_at),
          idleStep:
            r.idle_step === null || r.idle_step_at === null
              ? null
              : { index: Number(r.idle_step), at: Number(r.idle_step_at) },
        },
      ]),
    );
  }

  /** Forgets the rows of endpoints that are no longer live (deleted). */
  async forgetDeleted(): Promise<void> {
    await this.#db
      .deleteFrom('endpoint_activity')
      .where(
        'endpoint_id',
        'not in',
        this.#db.selectFrom('endpoints').select('id').where('deleted_at', 'is', null),
      )
      .execute();
  }
}
