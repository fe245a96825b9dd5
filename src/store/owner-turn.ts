/**
 * One owner's writes that a quota bounds, one after the other: the owner's `endpoint_counts` row, locked until the
 * transaction ends (PostgreSQL; SQLite runs one transaction at a time), so that a quota check and the write it
 * admits cannot interleave with another of the same owner's; and the counts those checks read.
 */
import type { Kysely, Transaction } from 'kysely';
import type { Database } from './schema.js';

/** Checks how many of a counted thing an owner keeps (before this save) inside the save's transaction; throws to refuse. */
export type CountAdmit = (saved: number) => void;

/**
 * Adds `delta` to the owner's count of live endpoints (`endpoint_counts`), creating its row on first use, and
 * holds the row's lock until the transaction ends; `0` only takes the lock.
 */
export async function countLive(
  trx: Transaction<Database>,
  ownerId: string,
  delta: 1 | 0 | -1,
): Promise<void> {
  await trx
    .insertInto('endpoint_counts')
    .values({ owner_id: ownerId, live: delta })
    .onConflict((oc) =>
      oc.column('owner_id').doUpdateSet({ live: (eb) => eb('endpoint_counts.live', '+', delta) }),
    )
    .execute();
}

/** Waits for the owner's turn (its other quota-bound writes end first) and holds it until the transaction ends. */
export function takeOwnerTurn(trx: Transaction<Database>, ownerId: string): Promise<void> {
  return countLive(trx, ownerId, 0);
}

/** How many rows of `table` the owner has (its secrets, its registry credentials). */
export async function countOwned(
  db: Kysely<Database> | Transaction<Database>,
  table: 'secrets' | 'registry_credentials',
  ownerId: string,
): Promise<number> {
  const row = await db
    .selectFrom(table)
    .select((eb) => eb.fn.countAll<number | string>().as('n'))
    .where('owner_id', '=', ownerId)
    .executeTakeFirstOrThrow();
  return Number(row.n);
}
