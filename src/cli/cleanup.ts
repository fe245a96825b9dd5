/**
 * `corral cleanup`: removes what one installation left on this host (its containers, networks, volumes and
 * firewall holes: app/cleanup.ts), saying each; `--dry-run` only lists them. The installation is the one of the
 * database `corral serve` uses (the same `--data-dir` or `--database-url`), or `--installation`. It refuses while
 * that installation's `corral serve` runs: SQLite's process lock is held, or a replica beat in the last 6 s.
 */
import { existsSync } from 'node:fs';
import { Command } from 'commander';
import { loadConfig } from '../config/config.js';
import { databaseError } from '../config/startup.js';
import { openStore, sqliteFileOf } from '../store/open.js';
import { redactDatabaseUrl } from '../store/postgres/connect.js';
import { DatabaseInUseError, lockSqliteDatabase, type ProcessLock } from '../store/sqlite/process-lock.js';
import { givenFlags, settingOptions } from './settings-options.js';

/** A replica whose heartbeat is this recent runs (cluster/shared-traffic.ts counts the same as alive). */
const REPLICA_ALIVE_MS = 6_000;

export interface CleanupIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

export function makeCleanupCommand(io: CleanupIo): Command {
  const command = new Command('cleanup')
    .description(
      "remove an installation's containers, networks, volumes and firewall rules left on this host",
    )
    .option(
      '--installation <id>',
      "the installation's id (default: the one of the database corral serve uses)",
    )
    .option('--dry-run', 'only list what would be removed', false)
    .action(async (options: { installation?: string; dryRun: boolean }) => {
      const config = loadConfig({ flags: givenFlags(options), env: io.env, readFile: () => '' });
      const file = sqliteFileOf({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
      let lock: ProcessLock | undefined;
      try {
        let installationId = options.installation;
        if (file === undefined || existsSync(file)) {
          if (file !== undefined) lock = lockOrRefuse(file);
          io.stderr(`database: ${file ?? redactDatabaseUrl(config.databaseUrl ?? '')}\n`);
          installationId = await storedInstallation(config, options.installation);
        }
        if (installationId === undefined) {
          throw new Error(
            `no database at ${file}: pass the --data-dir or --database-url that corral serve uses, or --installation`,
          );
        }
        // Loaded only when cleaning up: the runtimes' clients are not wanted by every other command.
        const { cleanUpInstallation } = await import('../app/cleanup.js');
        const report = await cleanUpInstallation({ installationId, dryRun: options.dryRun });
        const verb = options.dryRun ? 'would remove' : 'removed';
        io.stdout(`installation ${installationId}\n`);
        for (const line of report.removed) io.stdout(`${verb} ${line}\n`);
        for (const line of report.failed) io.stdout(`could not remove ${line}\n`);
        for (const line of report.skipped) io.stdout(`skipped ${line}\n`);
        if (report.removed.length === 0 && report.failed.length === 0)
          io.stdout('nothing left on this host\n');
        if (report.failed.length > 0) process.exitCode = 1;
      } finally {
        lock?.release();
      }
    });
  for (const option of settingOptions(['dataDir', 'databaseUrl'])) command.addOption(option);
  return command;
}

/** SQLite: held while cleaning, so that no corral serve starts meanwhile; refused while one runs. */
function lockOrRefuse(file: string): ProcessLock {
  try {
    return lockSqliteDatabase(file);
  } catch (error) {
    if (error instanceof DatabaseInUseError)
      throw new Error(`corral serve is running on ${file}: stop it before cleaning up its installation`);
    throw error;
  }
}

/** The database's installation id (or `named` where it has none); refused while a replica of it runs. */
async function storedInstallation(
  config: ReturnType<typeof loadConfig>,
  named: string | undefined,
): Promise<string | undefined> {
  const store = await openStore({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }).catch(
    (error: unknown) => {
      throw databaseError(error);
    },
  );
  try {
    const stored = await store.installation.current();
    if (named !== undefined && stored !== undefined && named !== stored) return named;
    const { replicas, now } = await store.replicas.list();
    const running = replicas.filter((r) => now - r.lastSeenAt < REPLICA_ALIVE_MS);
    if (running.length > 0) {
      throw new Error(
        `corral serve is running on this database (${running.map((r) => `${r.id} on ${r.host}`).join(', ')}): ` +
          'stop every replica before cleaning up its installation',
      );
    }
    return named ?? stored;
  } finally {
    await store.close();
  }
}
