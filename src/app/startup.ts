/**
 * What `corral serve` checks and opens before anything is built, each failure a ConfigError that names the setting
 * to change: the data directory's modes, the secret key, the operator's key, the SQLite lock and the store.
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import { createDatabaseFile, type SecuredDataDir, secureDataDir } from '../config/data-dir.js';
import { ConfigError } from '../config/settings.js';
import { databaseError } from '../config/startup.js';
import { loadSecretKey } from '../crypto/secret-box.js';
import { MIN_OPERATOR_KEY_LENGTH } from '../service/api-key-service.js';
import { openStore, sqliteFileOf } from '../store/open.js';
import { lockSqliteDatabase, type ProcessLock } from '../store/sqlite/process-lock.js';
import type { Store } from '../store/store.js';

/** How often the SQLite WAL is checkpointed, off the event loop (store/sqlite/checkpointer.ts). */
const SQLITE_CHECKPOINT_INTERVAL_MS = 1000;

/** The settings read before anything is written: the secret key, and the operator's key if one is set. */
export function startupSettings(
  config: Config,
  env: NodeJS.ProcessEnv,
  logger: Logger,
): { secretKey: Buffer; operatorKey: string | undefined } {
  const { tightened, leftOpen } = secureDataDirSetting(config, env);
  const secretKey = loadSecretKeySetting(env, config.dataDir);
  for (const change of tightened) {
    logger.warn(
      change,
      "tightened the mode of a data file (it holds secrets; only Corral's user may read it)",
    );
  }
  if (leftOpen) {
    logger.info(
      leftOpen,
      "the data directory is another user's and open to others; used as it is: it holds no secret (PostgreSQL, CORRAL_SECRET_KEY)",
    );
  }
  const operatorKey = env.CORRAL_API_KEY || undefined;
  if (operatorKey !== undefined && operatorKey.length < MIN_OPERATOR_KEY_LENGTH) {
    throw new ConfigError(
      `invalid CORRAL_API_KEY: use at least ${MIN_OPERATOR_KEY_LENGTH} random characters`,
    );
  }
  return { secretKey, operatorKey };
}

/** Opens the store; SQLite serves one process: a second `corral serve` on the same file is refused here. */
export async function openServeStore(
  config: Config,
  logger: Logger,
): Promise<{ store: Store; release: () => void }> {
  const sqliteFile = sqliteFileOf({ databaseUrl: config.databaseUrl, dataDir: config.dataDir });
  createDatabaseFile(sqliteFile);
  const sqliteLock = sqliteFile === undefined ? undefined : lockSqliteSetting(sqliteFile);
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    sqlite: {
      queryThread: true,
      backgroundCheckpoints: {
        intervalMs: SQLITE_CHECKPOINT_INTERVAL_MS,
        onError: (reason) => logger.warn({ reason }, 'an SQLite checkpoint failed; the next one is tried'),
      },
      onVacuumConversion: (done) =>
        logger.info(done, 'SQLite database converted to incremental auto-vacuum (once: a VACUUM at start)'),
    },
    onConnectionError: (error) =>
      logger.warn({ reason: error.message }, 'a database connection broke; the next query opens a new one'),
  }).catch((error: unknown) => {
    sqliteLock?.release();
    throw databaseError(error);
  });
  return { store, release: () => sqliteLock?.release() };
}

/** The data directory holds key hashes and sealed secrets: 0700, its key and database 0600 (config/data-dir.ts). */
function secureDataDirSetting(config: Config, env: NodeJS.ProcessEnv): SecuredDataDir {
  try {
    return secureDataDir({
      dataDir: config.dataDir,
      databaseFile: sqliteFileOf({ databaseUrl: config.databaseUrl, dataDir: config.dataDir }),
      keyElsewhere: Boolean(env.CORRAL_SECRET_KEY),
    });
  } catch (error) {
    throw new ConfigError(
      `invalid --data-dir (CORRAL_DATA_DIR) ${config.dataDir}: ${(error as Error).message}`,
    );
  }
}

function lockSqliteSetting(databaseFile: string): ProcessLock {
  try {
    return lockSqliteDatabase(databaseFile);
  } catch (error) {
    throw databaseError(error);
  }
}

function loadSecretKeySetting(env: NodeJS.ProcessEnv, dataDir: string): Buffer {
  try {
    return loadSecretKey({ envValue: env.CORRAL_SECRET_KEY, path: join(dataDir, 'secret.key') });
  } catch (error) {
    const setting = env.CORRAL_SECRET_KEY ? 'CORRAL_SECRET_KEY' : `--data-dir (CORRAL_DATA_DIR) ${dataDir}`;
    throw new ConfigError(`invalid ${setting}: ${(error as Error).message}`);
  }
}
