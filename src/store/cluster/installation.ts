/** The installation's id: made once, at the first start on a database, and the same for every later start. */
import type { Kysely } from 'kysely';
import type { Database } from '../schema.js';

export class InstallationRepository {
  readonly #db: Kysely<Database>;

  constructor(options: { db: Kysely<Database> }) {
    this.#db = options.db;
  }

  /**
   * The stored id, or `candidate` stored now when there is none. Two processes starting together on one new
   * database both end with the one id that was stored first.
   */
  async ensure(candidate: string, now: number): Promise<string> {
    const existing = await this.#read();
    if (existing !== undefined) return existing;
    await this.#db
      .insertInto('installation')
      .values({ id: candidate, created_at: now })
      .onConflict((c) => c.doNothing())
      .execute();
    const stored = await this.#read();
    if (stored === undefined) throw new Error('the installation id could not be stored');
    return stored;
  }

  /** The stored id; undefined on a database no `corral serve` has started on. */
  current(): Promise<string | undefined> {
    return this.#read();
  }

  async #read(): Promise<string | undefined> {
    const rows = await this.#db
      .selectFrom('installation')
      .select('id')
      .orderBy('created_at')
      .limit(1)
      .execute();
    return rows[0]?.id;
  }
}
