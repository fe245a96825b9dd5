/**
 * SQLite on its query thread answers as the in-process connection does: the same rows (BLOBs as Buffers), the same
 * errors with the same codes, transactions that roll back and never interleave. Both open a real file.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type Kysely, sql } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { DatabaseConnection } from '../connection.js';
import { connectSqlite } from './connect.js';

type Scratch = Kysely<any>;

describe.each([
  { name: 'in-process', queryThread: false },
  { name: 'on its thread', queryThread: true },
])('SQLite $name', ({ queryThread }) => {
  let dir: string;
  let connection: DatabaseConnection;
  let db: Scratch;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'corral-thread-'));
    connection = connectSqlite(join(dir, 'corral.db'), { queryThread });
    db = connection.db as unknown as Scratch;
    await sql`create table t (id integer primary key, name text unique, data blob)`.execute(db);
  });

  afterEach(async () => {
    await connection.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('inserts and reads rows back, a BLOB as a Buffer', async () => {
    const inserted = await db
      .insertInto('t')
      .values({ name: 'a', data: Buffer.from([1, 2, 3]) })
      .executeTakeFirst();
    expect(inserted.insertId).toBe(1n);
    expect(inserted.numInsertedOrUpdatedRows).toBe(1n);
    const rows = await db.selectFrom('t').selectAll().execute();
    expect(rows).toEqual([{ id: 1, name: 'a', data: Buffer.from([1, 2, 3]) }]);
    expect(Buffer.isBuffer(rows[0]?.data)).toBe(true);
    const updated = await db.updateTable('t').set({ name: 'b' }).where('id', '=', 1).executeTakeFirst();
    expect(updated.numUpdatedRows).toBe(1n);
  });

  it('fails a unique violation with SQLite code, which the connection recognises', async () => {
    await db.insertInto('t').values({ name: 'a' }).execute();
    const error = await db
      .insertInto('t')
      .values({ name: 'a' })
      .execute()
      .catch((e: unknown) => e);
    expect(error).toMatchObject({ name: 'SqliteError', code: 'SQLITE_CONSTRAINT_UNIQUE' });
    expect(String((error as Error).message)).toContain('UNIQUE constraint failed: t.name');
    expect(connection.isUniqueViolation(error)).toBe(true);
  });

  it('fails a statement it cannot prepare with SQLite message', async () => {
    const error = await sql`select nope from t`.execute(db).catch((e: unknown) => e);
    expect(error).toMatchObject({
      name: 'SqliteError',
      code: 'SQLITE_ERROR',
      message: 'no such column: nope',
    });
  });

  it('rolls a failed transaction back', async () => {
    const failed = await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('t').values({ name: 'kept?' }).execute();
        throw new Error('changed its mind');
      })
      .catch((e: unknown) => (e as Error).message);
    expect(failed).toBe('changed its mind');
    expect(await db.selectFrom('t').selectAll().execute()).toEqual([]);
  });

  it('rolls back a transaction whose first statement fails, and the connection goes on', async () => {
    await db.insertInto('t').values({ name: 'taken' }).execute();
    const failed = await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('t').values({ name: 'taken' }).execute();
      })
      .catch((e: unknown) => e);
    expect(connection.isUniqueViolation(failed)).toBe(true);
    // Still in a transaction on the thread, this insert would be rolled back by the next rollback or never committed.
    await db.insertInto('t').values({ name: 'after' }).execute();
    await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('t').values({ name: 'rolled back' }).execute();
        throw new Error('no');
      })
      .catch(() => undefined);
    const names = (await db.selectFrom('t').select('name').orderBy('id').execute()).map((r) => r.name);
    expect(names).toEqual(['taken', 'after']);
  });

  it('commits and rolls back transactions that ran no statement, and the next transaction still holds', async () => {
    await db.transaction().execute(async () => undefined);
    await db
      .transaction()
      .execute(async () => {
        throw new Error('before any statement');
      })
      .catch(() => undefined);
    await db.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ name: 'one' }).execute();
      await trx.insertInto('t').values({ name: 'two' }).execute();
    });
    const failed = await db
      .transaction()
      .execute(async (trx) => {
        await trx.insertInto('t').values({ name: 'three' }).execute();
        await trx.insertInto('t').values({ name: 'one' }).execute();
      })
      .catch((e: unknown) => e);
    expect(connection.isUniqueViolation(failed)).toBe(true);
    const names = (await db.selectFrom('t').select('name').orderBy('id').execute()).map((r) => r.name);
    expect(names).toEqual(['one', 'two']);
  });

  it("runs one caller's transaction at a time: another's statement waits for its commit", async () => {
    const order: string[] = [];
    let inside!: () => void;
    const entered = new Promise<void>((resolve) => {
      inside = resolve;
    });
    let finish!: () => void;
    const held = new Promise<void>((resolve) => {
      finish = resolve;
    });
    const transaction = db.transaction().execute(async (trx) => {
      await trx.insertInto('t').values({ name: 'first' }).execute();
      inside();
      await held;
      order.push('commit');
    });
    await entered;
    const outside = db
      .selectFrom('t')
      .select('name')
      .execute()
      .then((rows) => {
        order.push(`read ${rows.length}`);
      });
    finish();
    await Promise.all([transaction, outside]);
    expect(order).toEqual(['commit', 'read 1']);
  });

  it('returns freed pages to the disk', async () => {
    const big = Buffer.alloc(256 * 1024, 7);
    for (let i = 0; i < 8; i++)
      await db
        .insertInto('t')
        .values({ name: `n${i}`, data: big })
        .execute();
    await db.deleteFrom('t').execute();
    const left = await connection.reclaimFreePages?.(10_000);
    expect(left).toBe(0);
  });
});
