/**
 * Every endpoint's jobs in the queue and in progress, in one grouped statement (the jobs table's `jobs_seen` index
 * leads with the status): what `/metrics` and the history read of the store, however many endpoints there are.
 */
import type { Kysely } from 'kysely';
import { QUEUED, RUNNING } from './job-reads.js';
import type { Database } from './schema.js';

/** One endpoint's jobs now. */
export interface LiveJobCount {
  inQueue: number;
  inProgress: number;
}

export class JobCountRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /** Each endpoint with a job IN_QUEUE or IN_PROGRESS, and how many of each (endpoints with none are absent). */
  async live(): Promise<Map<string, LiveJobCount>> {
    const rows = await this.#db
      .selectFrom('jobs')
      .select(['endpoint_id', 'status', (eb) => eb.fn.countAll<number>().as('n')])
      .where('status', 'in', [QUEUED, RUNNING])
      .groupBy(['endpoint_id', 'status'])
      .execute();
    const counts = new Map<string, LiveJobCount>();
    for (const row of rows) {
      let count = counts.get(row.endpoint_id);
      if (!count) {
        count = { inQueue: 0, inProgress: 0 };
        counts.set(row.endpoint_id, count);
      }
      if (row.status === QUEUED) count.inQueue = Number(row.n);
      else count.inProgress = Number(row.n);
    }
    return counts;
  }
}
