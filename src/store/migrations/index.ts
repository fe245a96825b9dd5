/** Every migration in order, and `migrateToLatest`, which applies those a database has not had yet. */
import { type Kysely, type Migration, Migrator } from 'kysely';
import type { Database, DialectName } from '../schema.js';
import * as initial from './0001-initial.js';
import * as workers from './0002-workers.js';
import * as endpointCounts from './0003-endpoint-counts.js';
import * as secrets from './0006-secrets.js';

type VersionedMigration = (db: Kysely<unknown>, dialect: DialectName) => Promise<void>;

/** Ordered by name; a released migration is never edited, only followed by a new one. */
const MIGRATIONS: Record<string, VersionedMigration> = {
  '0001-initial': initial.up,
  '0002-workers': (db) => workers.up(db),
  '0003-endpoint-counts': (db) => endpointCounts.up(db),
  '0006-secrets': (db) => secrets.up(db),
};

export async function migrateToLatest(
  db: Kysely<Database>,
  dialect: DialectName,
  schema?: string,
): Promise<string[]> {
  const migrator = new Migrator({
    db,
    // Migrations are independent additions written on parallel branches: a database that has a later one (0006)
    // still takes an earlier one it lacks (0004) instead of refusing to start.
    allowUnorderedMigrations: true,
    ...(schema ? { migrationTableSchema: schema } : {}),
    provider: {
      getMigrations: async () =>
        Object.fromEntries(
          Object.entries(MIGRATIONS).map(([name, up]): [string, Migration] => [
            name,
            { up: (migrationDb) => up(migrationDb, dialect) },
          ]),
        ),
    },
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error)
    throw new Error(`database migration failed: ${error instanceof Error ? error.message : String(error)}`);
  return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
}
