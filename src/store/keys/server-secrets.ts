/**
 * The `server_secrets` table: keys the server makes for itself once and every replica shares (the worker tokens'
 * key of the jobs API). The first replica to ask creates the value; every other reads the same one.
 */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

export class ServerSecretRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /** The secret named `name`, stored as `generate()` made it the first time any replica asked. */
  async getOrCreate(name: string, generate: () => string, now: number): Promise<string> {
    await this.#db
      .insertInto('server_secrets')
      .values({ name, value: generate(), created_at: now })
      .onConflict((oc) => oc.column('name').doNothing())
      .execute();
    const row = await this.#db
      .selectFrom('server_secrets')
      .select('value')
      .where('name', '=', name)
      .executeTakeFirstOrThrow();
    return row.value;
  }
}
