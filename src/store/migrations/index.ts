/** Every migration in order, and `migrateToLatest`, which applies those a database has not had yet. */
import { type Kysely, type Migration, Migrator } from 'kysely';
import type { Database, DialectName } from '../schema.js';
import * as initial from './0001-initial.js';
import * as workers from './0002-workers.js';
import * as endpointCounts from './0003-endpoint-counts.js';
import * as workerDrain from './0004-worker-drain.js';
import * as invokeKeys from './0005-invoke-keys.js';
import * as secrets from './0006-secrets.js';
import * as installation from './0007-installation.js';
import * as workerOutputs from './0008-worker-outputs.js';
import * as endpointUse from './0009-endpoint-use.js';
import * as cluster from './0010-cluster.js';
import * as feedRoutes from './0011-feed-routes.js';
import * as fwdGatewayUrl from './0012-fwd-gateway-url.js';
import * as historySamples from './0013-clusterhist-history-samples.js';
import * as webhooks from './0014-webhooks.js';
import * as jobs from './0015-jobs.js';
import * as jobBounds from './0016-job-bounds.js';
import * as endpointNames from './0017-endpoint-names.js';
import * as usageSegments from './0018-usage-segments.js';
import * as openaiModels from './0019-openai-models.js';
import * as usageSegmentsOwner from './0020-usage-segments-owner.js';
import * as usageDaily from './0021-usage-daily.js';
import * as endpointActivity from './0022-endpoint-activity.js';
import * as jobReturns from './0023-job-returns.js';

type VersionedMigration = (db: Kysely<unknown>, dialect: DialectName) => Promise<void>;

/** Ordered by name; a released migration is never edited, only followed by a new one. */
const MIGRATIONS: Record<string, VersionedMigration> = {
  '0001-initial': initial.up,
  '0002-workers': (db) => workers.up(db),
  '0003-endpoint-counts': (db) => endpointCounts.up(db),
  '0004-worker-drain': (db) => workerDrain.up(db),
  '0005-invoke-keys': (db) => invokeKeys.up(db),
  '0007-installation': (db) => installation.up(db),
  '0006-secrets': (db) => secrets.up(db),
  '0008-worker-outputs': (db) => workerOutputs.up(db),
  '0009-endpoint-use': (db) => endpointUse.up(db),
  '0010-cluster': (db) => cluster.up(db),
  '0011-feed-routes': (db) => feedRoutes.up(db),
  '0012-fwd-gateway-url': (db) => fwdGatewayUrl.up(db),
  '0013-clusterhist-history-samples': (db) => historySamples.up(db),
  '0014-webhooks': (db) => webhooks.up(db),
  '0015-jobs': (db, dialect) => jobs.up(db, dialect),
  '0016-job-bounds': (db, dialect) => jobBounds.up(db, dialect),
  '0017-endpoint-names': (db) => endpointNames.up(db),
  '0018-usage-segments': (db, dialect) => usageSegments.up(db, dialect),
  '0019-openai-models': (db) => openaiModels.up(db),
  '0020-usage-segments-owner': (db) => usageSegmentsOwner.up(db),
  '0021-usage-daily': (db, dialect) => usageDaily.up(db, dialect),
  '0022-endpoint-activity': (db) => endpointActivity.up(db),
  '0023-job-returns': (db) => jobReturns.up(db),
};

export async function migrateToLatest(
  db: Kysely<Database>,
  dialect: DialectName,
  schema?: string,
): Promise<string[]> {
  const migrator = new Migrator({
    db,
    // A migration named before one already applied still runs (in name order): numbers are given out to work done
    // side by side (0004 and 0005 may land in either order), and an upgrade test re-applies an early one.
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
  for (let attempt = 1; ; attempt++) {
    const { error, results } = await migrator.migrateToLatest();
    if (!error) return (results ?? []).filter((r) => r.status === 'Success').map((r) => r.migrationName);
    if (attempt < MIGRATION_ATTEMPTS && mayBeADropElsewhere(error, schema ?? 'public')) continue;
    throw new Error(`database migration failed: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** How many times a migration is tried when another schema of the database was dropped under it. */
const MIGRATION_ATTEMPTS = 10;

/** What a look at every schema's tables answers when one of them, or a table or column in it, is dropped meanwhile. */
const DROPPED_MEANWHILE = new Set(['3F000', '42P01', '42703']);

/**
 * Whether the migrator may have failed because a schema other than Corral's, or a table in one, was dropped while it
 * looked for its own tables: Kysely's PostgreSQL introspection reads every schema's tables (`pg_get_serial_sequence`
 * of each column), and what another user of the database drops meanwhile fails it with invalid_schema_name
 * (`schema "x" does not exist`), undefined_table (`relation "x.t" does not exist`) or undefined_column (`column "c"
 * of relation "t" does not exist`, no schema said). Nothing was applied then (each migration runs in a transaction,
 * after that look), so it is tried again, unless the error names Corral's own schema. A migration's own such error
 * fails each time, and is said after the last.
 */
function mayBeADropElsewhere(error: unknown, ownSchema: string): boolean {
  if (!(error instanceof Error) || !DROPPED_MEANWHILE.has(String((error as { code?: unknown }).code)))
    return false;
  const named =
    /schema "([^"]+)" does not exist/.exec(error.message)?.[1] ??
    /relation "([^".]+)\.[^"]+"/.exec(error.message)?.[1];
  return named !== ownSchema;
}
