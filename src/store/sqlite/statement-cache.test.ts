/** The SQLite statement cache: one statement per SQL text, reused; bounded; a busy one not shared; Kysely on it. */
import SqliteDatabase from 'better-sqlite3';
import { type Generated, Kysely, SqliteDialect, sql } from 'kysely';
import { afterEach, describe, expect, it } from 'vitest';
import { StatementCache } from './statement-cache.js';

const opened: SqliteDatabase.Database[] = [];

function database(): SqliteDatabase.Database {
  const db = new SqliteDatabase(':memory:');
  opened.push(db);
  db.exec('create table t (id integer primary key, v text)');
  return db;
}

afterEach(() => {
  for (const db of opened.splice(0)) if (db.open) db.close();
});

describe('StatementCache', () => {
  it('hands back the statement already prepared for the same SQL text', () => {
    const cache = new StatementCache({ database: database() });
    const first = cache.prepare('select v from t where id = ?');
    expect(cache.prepare('select v from t where id = ?')).toBe(first);
    expect(cache.prepare('select id from t where id = ?')).not.toBe(first);
    expect(cache.size).toBe(2);
  });

  it('keeps at most maxStatements, dropping the least recently used', () => {
    const cache = new StatementCache({ database: database(), maxStatements: 2 });
    const a = cache.prepare('select 1');
    const b = cache.prepare('select 2');
    expect(cache.prepare('select 1')).toBe(a); // now 'select 2' is the least recently used
    cache.prepare('select 3');
    expect(cache.size).toBe(2);
    expect(cache.prepare('select 1')).toBe(a);
    expect(cache.prepare('select 2')).not.toBe(b);
  });

  it('prepares a fresh statement while the cached one is still iterating', () => {
    const db = database();
    db.exec("insert into t (v) values ('a'), ('b')");
    const cache = new StatementCache({ database: db });
    const text = 'select v from t order by id';
    const iterating = cache.prepare(text).iterate();
    expect(iterating.next().value).toEqual({ v: 'a' });
    const other = cache.prepare(text);
    expect(other.all()).toEqual([{ v: 'a' }, { v: 'b' }]);
    expect(iterating.next().value).toEqual({ v: 'b' });
    iterating.return?.();
  });

  it('serves Kysely: the same query twice reuses its statement and reads what was written between', async () => {
    const cache = new StatementCache({ database: database() });
    const db = new Kysely<{ t: { id: Generated<number>; v: string } }>({
      dialect: new SqliteDialect({ database: cache }),
    });
    await db.insertInto('t').values({ v: 'x' }).execute();
    const read = () => db.selectFrom('t').select('v').where('id', '=', 1).executeTakeFirst();
    expect(await read()).toEqual({ v: 'x' });
    const size = cache.size;
    await db.updateTable('t').set({ v: 'y' }).where('id', '=', 1).execute();
    expect(await read()).toEqual({ v: 'y' });
    expect(cache.size).toBe(size + 1); // the update only; the read's statement was reused
    await db.transaction().execute(async (trx) => {
      await sql`update t set v = 'z'`.execute(trx);
    });
    expect(await read()).toEqual({ v: 'z' });
    await db.destroy();
  });
});
