/**
 * The `worker_outputs` table: the last lines of workers that ended, kept after their containers are gone. Only the
 * controller writes it (and keeps a few rows per endpoint); the API reads it for `GET endpoint/worker/log`.
 */
import type { Kysely, Selectable } from 'kysely';
import type { Database, WorkerOutputsTable } from '../schema.js';

/** What is known of a worker that ended, without its output. */
export interface EndedWorker {
  workerId: string;
  endpointId: string;
  endedAt: number;
  /** Ended failed (crashed, failed its health checks or its start), not removed by scaling or a replacement. */
  failed: boolean;
  /** Why it ended, e.g. `worker exited with code 3` or `scaled down`. */
  reason: string;
  /** Older lines were dropped to keep within the limits. */
  truncated: boolean;
}

/** An ended worker and its last lines, oldest first. */
export interface KeptOutput extends EndedWorker {
  lines: string[];
}

export class WorkerOutputRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /** Keeps a worker's output, replacing what was kept for it before. */
  async save(output: KeptOutput): Promise<void> {
    const row: WorkerOutputsTable = {
      worker_id: output.workerId,
      endpoint_id: output.endpointId,
      ended_at: output.endedAt,
      failed: output.failed ? 1 : 0,
      reason: output.reason,
      truncated: output.truncated ? 1 : 0,
      output: output.lines.map((line) => `${line}\n`).join(''),
    };
    const { worker_id: _id, ...changes } = row;
    await this.#db
      .insertInto('worker_outputs')
      .values(row)
      .onConflict((oc) => oc.column('worker_id').doUpdateSet(changes))
      .execute();
  }

  async get(endpointId: string, workerId: string): Promise<KeptOutput | undefined> {
    const row = await this.#db
      .selectFrom('worker_outputs')
      .selectAll()
      .where('worker_id', '=', workerId)
      .where('endpoint_id', '=', endpointId)
      .executeTakeFirst();
    if (!row) return undefined;
    const lines = row.output.split('\n');
    lines.pop();
    return { ...ended(row), lines };
  }

  /** The endpoint's ended workers whose output is kept, the most recently ended first. */
  async listByEndpoint(endpointId: string): Promise<EndedWorker[]> {
    const rows = await this.#db
      .selectFrom('worker_outputs')
      .select(['worker_id', 'endpoint_id', 'ended_at', 'failed', 'reason', 'truncated'])
      .where('endpoint_id', '=', endpointId)
      .orderBy('ended_at', 'desc')
      .orderBy('worker_id', 'desc')
      .execute();
    return rows.map(ended);
  }

  async delete(workerIds: string[]): Promise<void> {
    if (workerIds.length === 0) return;
    await this.#db.deleteFrom('worker_outputs').where('worker_id', 'in', workerIds).execute();
  }

  /** Forgets the output of workers whose endpoint was deleted (or never existed). */
  async deleteOfGoneEndpoints(): Promise<void> {
    await this.#db
      .deleteFrom('worker_outputs')
      .where('endpoint_id', 'not in', (eb) =>
        eb.selectFrom('endpoints').select('id').where('deleted_at', 'is', null),
      )
      .execute();
  }
}

function ended(row: Omit<Selectable<WorkerOutputsTable>, 'output'>): EndedWorker {
  return {
    workerId: row.worker_id,
    endpointId: row.endpoint_id,
    endedAt: Number(row.ended_at),
    failed: row.failed === 1,
    reason: row.reason,
    truncated: row.truncated === 1,
  };
}
