/**
 * Migrating Corral's schema while another user of the same PostgreSQL database drops schemas of its own (a shared
 * database, or the test suites' throwaway schemas): Kysely's introspection reads every schema's tables, and one
 * dropped meanwhile failed the migration with `schema "..." does not exist`, a table dropped with `relation "..."
 * does not exist` (store suites failed so when run side by side). In a database of its own, so that its drops reach no other suite.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../../../test/support/integration.js';
import { ScratchDatabases } from '../../../test/support/scratch-databases.js';
import { connectPostgres } from '../postgres/connect.js';
import { Store } from '../store.js';

const url = process.env.CORRAL_TEST_DATABASE_URL;
const withPostgres = integrationAvailable(
  'PostgreSQL',
  Boolean(url),
  'set CORRAL_TEST_DATABASE_URL (scripts/provision.sh prints it)',
);

describe.runIf(withPostgres)('migrations beside another user dropping schemas (PostgreSQL)', () => {
  let databases: ScratchDatabases;
  let databaseUrl = '';

  beforeAll(async () => {
    databases = await ScratchDatabases.connect(url ?? '');
    databaseUrl = await databases.create('corral_drops');
  });
  afterAll(async () => {
    await databases?.dropAll();
  });

  it('every migration of its own schema succeeds while others are made and dropped', async () => {
    const store = new Store({
      connection: connectPostgres({ connectionString: databaseUrl, schema: 'corral' }),
    });
    const other = new pg.Client({ connectionString: databaseUrl });
    await other.connect();
    await other.query('create schema corral');
    let stop = false;
    let drops = 0;
    // Another user of the database: schemas with a table each, made and dropped one after another.
    const dropper = (async () => {
      while (!stop) {
        const name = `other_${drops % 4}`;
        await other.query(
          `create schema ${name}; create table ${name}.t (id serial primary key, a text, b int)`,
        );
        // A table dropped alone, then its schema: each fails a look at every schema's tables made meanwhile.
        if (drops % 2 === 0) await other.query(`drop table ${name}.t`);
        await other.query(`drop schema ${name} cascade`);
        drops++;
        await sleep(5);
      }
    })();
    try {
      const applied = [await store.migrate()];
      for (let run = 0; run < 60; run++) applied.push(await store.migrate());
      expect(applied[0]?.length).toBeGreaterThan(20);
      expect(applied.slice(1).every((names) => names.length === 0)).toBe(true);
    } finally {
      stop = true;
      await dropper;
      await other.end();
      await store.close();
    }
    // The other user was at work throughout.
    expect(drops).toBeGreaterThan(20);
  }, 60_000);
});
