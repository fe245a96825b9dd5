/**
 * The `leases` table: leader election with a fencing token (docs/operations.md). A lease is held by one replica
 * until it expires on the database's clock; each acquisition takes the next token. Writes of a leader go through
 * `fenced`, which checks in their own transaction that the token is still current and unexpired (and keeps it so
 * until they commit), so that a deposed leader's writes are refused.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database, DialectName } from '../schema.js';
import { databaseNow } from './database-clock.js';

/** A lease as one replica holds it: the proof its fenced writes present. */
export interface LeaseClaim {
  name: string;
  holder: string;
  token: number;
}

/** A lease as stored, with the database's clock at the read. */
export interface Lease extends LeaseClaim {
  acquiredAt: number;
  renewedAt: number;
  expiresAt: number;
  /** The database's clock when this was read. */
  now: number;
}

/** A fenced write whose lease is no longer the writer's: another replica took it, or it expired. */
export class LeaseLostError extends Error {
  override name = 'LeaseLostError';
  readonly code = 'LEASE_LOST';

  constructor(readonly claim: LeaseClaim) {
    super(`the ${claim.name} lease (token ${claim.token}) is no longer held by ${claim.holder}`);
  }
}

/** The expiry of a seized lease: the last millisecond a Date can show. */
const NEVER = 8_640_000_000_000_000;

export class LeaseRepository {
  readonly #db: Kysely<Database>;
  readonly #dialect: DialectName;

  constructor(options: { db: Kysely<Database>; dialect: DialectName }) {
    this.#db = options.db;
    this.#dialect = options.dialect;
  }

  /**
   * Takes the lease for `ttlMs` when nobody holds it (never held, released, or expired), with the next token;
   * undefined when another holds it.
   */
  async tryAcquire(name: string, holder: string, ttlMs: number): Promise<LeaseClaim | undefined> {
    const now = databaseNow(this.#dialect);
    const taken = await this.#db
      .updateTable('leases')
      .set((eb) => ({
        holder,
        token: eb('token', '+', 1),
        acquired_at: now,
        renewed_at: now,
        expires_at: eb(now, '+', ttlMs),
      }))
      .where('name', '=', name)
      .where('expires_at', '<=', now)
      .returning('token')
      .executeTakeFirst();
    if (taken) return { name, holder, token: Number(taken.token) };
    const first = await this.#db
      .insertInto('leases')
      .values((eb) => ({
        name,
        holder,
        token: 1,
        acquired_at: now,
        renewed_at: now,
        expires_at: eb(now, '+', ttlMs),
      }))
      .onConflict((oc) => oc.column('name').doNothing())
      .returning('token')
      .executeTakeFirst();
    return first ? { name, holder, token: Number(first.token) } : undefined;
  }

  /**
   * Takes the lease whoever holds it, with the next token and no expiry: only for a database that one process
   * holds by other means (SQLite's process lock), where that process always leads.
   */
  async seize(name: string, holder: string): Promise<LeaseClaim> {
    const now = databaseNow(this.#dialect);
    const values = { holder, acquired_at: now, renewed_at: now, expires_at: NEVER };
    const row = await this.#db
      .insertInto('leases')
      .values({ name, token: 1, ...values })
      .onConflict((oc) =>
        oc.column('name').doUpdateSet((eb) => ({ ...values, token: eb('leases.token', '+', 1) })),
      )
      .returning('token')
      .executeTakeFirstOrThrow();
    return { name, holder, token: Number(row.token) };
  }

  /** Extends the lease by `ttlMs` from now; false when it expired or is no longer this claim's. */
  async renew(claim: LeaseClaim, ttlMs: number): Promise<boolean> {
    const now = databaseNow(this.#dialect);
    const renewed = await this.#db
      .updateTable('leases')
      .set((eb) => ({ renewed_at: now, expires_at: eb(now, '+', ttlMs) }))
      .where('name', '=', claim.name)
      .where('holder', '=', claim.holder)
      .where('token', '=', claim.token)
      .where('expires_at', '>', now)
      .returning('token')
      .executeTakeFirst();
    return renewed !== undefined;
  }

  /** Ends the lease now if this claim still holds it, so that another replica takes it at once. */
  async release(claim: LeaseClaim): Promise<void> {
    const now = databaseNow(this.#dialect);
    await this.#db
      .updateTable('leases')
      .set({ expires_at: now })
      .where('name', '=', claim.name)
      .where('holder', '=', claim.holder)
      .where('token', '=', claim.token)
      .where('expires_at', '>', now)
      .execute();
  }

  /** The lease as stored (held or not), or undefined when it was never taken. */
  async read(name: string): Promise<Lease | undefined> {
    const row = await this.#db
      .selectFrom('leases')
      .selectAll()
      .select(databaseNow(this.#dialect).as('now'))
      .where('name', '=', name)
      .executeTakeFirst();
    if (!row) return undefined;
    return {
      name: row.name,
      holder: row.holder,
      token: Number(row.token),
      acquiredAt: Number(row.acquired_at),
      renewedAt: Number(row.renewed_at),
      expiresAt: Number(row.expires_at),
      now: Number(row.now),
    };
  }

  /** Whether the claim is current and unexpired now. */
  async holds(claim: LeaseClaim): Promise<boolean> {
    return (await this.#current(this.#db, claim, false)) !== undefined;
  }

  /**
   * Runs `write` in one transaction that first checks the claim is current and unexpired, and throws
   * LeaseLostError when it is not. On PostgreSQL the check locks the lease row (FOR SHARE) until the commit: a
   * replica taking the lease meanwhile waits for the write, so every write of a term lands before the next term.
   */
  async fenced<T>(claim: LeaseClaim, write: (trx: Transaction<Database>) => Promise<T>): Promise<T> {
    return this.#db.transaction().execute(async (trx) => {
      if ((await this.#current(trx, claim, true)) === undefined) throw new LeaseLostError(claim);
      return write(trx);
    });
  }

  #current(db: Kysely<Database>, claim: LeaseClaim, lock: boolean) {
    const query = db
      .selectFrom('leases')
      .select('token')
      .where('name', '=', claim.name)
      .where('holder', '=', claim.holder)
      .where('token', '=', claim.token)
      .where('expires_at', '>', databaseNow(this.#dialect));
    // SQLite has no row locks; its transactions are serial, and one process holds it anyway.
    return (lock && this.#dialect === 'postgres' ? query.forShare() : query).executeTakeFirst();
  }
}
