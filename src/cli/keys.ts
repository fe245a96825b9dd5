/**
 * `corral keys create|list|revoke`: API keys managed directly on the store, with no server running. Each names the
 * database it opens, and none creates a database that is not there unless `--create-database` asks it to (a wrong
 * `--data-dir` would otherwise make an empty one, whose keys the server never sees).
 */
import { existsSync } from 'node:fs';
import { Command, Option } from 'commander';
import { loadStoreLocation } from '../config/config.js';
import { databaseError } from '../config/startup.js';
import { systemClock } from '../ports/clock.js';
import { ApiKeyService, DEFAULT_OWNER } from '../service/api-key-service.js';
import { openStore, sqliteFileOf } from '../store/open.js';
import { redactDatabaseUrl } from '../store/postgres/connect.js';
import { givenFlags, settingOptions } from './settings-options.js';

export interface KeysIo {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
  /** Whether a file exists (the SQLite database). */
  exists?: (path: string) => boolean;
}

export function makeKeysCommand(io: KeysIo): Command {
  const exists = io.exists ?? existsSync;
  const keys = new Command('keys').description(
    'create, list and revoke API keys (works on the store directly)',
  );

  const withService = async (
    options: Record<string, unknown>,
    run: (service: ApiKeyService) => Promise<void>,
  ) => {
    const location = loadStoreLocation({ flags: givenFlags(options), env: io.env });
    const file = sqliteFileOf(location);
    const target = file ?? redactDatabaseUrl(location.databaseUrl ?? '');
    if (file !== undefined && !exists(file) && options.createDatabase !== true) {
      throw new Error(
        `no database at ${file}: pass the --data-dir or --database-url that corral serve uses ` +
          '(or CORRAL_DATA_DIR, CORRAL_DATABASE_URL), or --create-database to create a new one there',
      );
    }
    io.stderr(`database: ${target}\n`);
    const store = await openStore(location).catch((error: unknown) => {
      throw databaseError(error);
    });
    try {
      await run(new ApiKeyService({ store, clock: systemClock }));
    } finally {
      await store.close();
    }
  };
  const storeOptions = () => settingOptions(['dataDir', 'databaseUrl']);

  const create = new Command('create')
    .description('create a key and print it once')
    .option('--owner <owner>', 'owner of the key and of what it creates', DEFAULT_OWNER)
    .option('--name <name>', 'a label to recognise the key by', '')
    .option('--admin', 'an admin key may act for other owners with X-Corral-Owner', false)
    .action((options: { owner: string; name: string; admin: boolean }) =>
      withService(options, async (service) => {
        const { id, key } = await service.create({
          ownerId: options.owner,
          name: options.name,
          admin: options.admin,
        });
        io.stdout(`${key}\n`);
        io.stderr(`created key ${id} for owner "${options.owner}"; it is not shown again\n`);
      }),
    );
  const list = new Command('list')
    .description('list keys (never their secret)')
    .option('--owner <owner>', 'only this owner')
    .option('--json', 'print JSON', false)
    .action((options: { owner?: string; json: boolean }) =>
      withService(options, async (service) => {
        const records = (await service.list(options.owner)).map((r) => ({
          id: r.id,
          owner: r.ownerId,
          name: r.name,
          admin: r.admin,
          created: new Date(r.createdAt).toISOString(),
          lastUsed: r.lastUsedAt === null ? '' : new Date(r.lastUsedAt).toISOString(),
          revoked: r.revokedAt === null ? '' : new Date(r.revokedAt).toISOString(),
        }));
        if (options.json) io.stdout(`${JSON.stringify(records, null, 2)}\n`);
        else io.stdout(formatRows(records));
      }),
    );
  const revoke = new Command('revoke')
    .description('revoke a key by id; requests with it fail at once')
    .argument('<id>', 'key id, as `corral keys list` shows it')
    .action((id: string, options: Record<string, unknown>) =>
      withService(options, async (service) => {
        if (!(await service.revoke(id))) {
          io.stderr(`error: no active key with id "${id}"\n`);
          process.exitCode = 1;
          return;
        }
        io.stdout(`revoked ${id}\n`);
      }),
    );
  for (const sub of [create, list, revoke]) {
    for (const option of storeOptions()) sub.addOption(option);
    sub.addOption(
      new Option('--create-database', 'create the database if there is none (SQLite: the file)').default(
        false,
      ),
    );
    keys.addCommand(sub);
  }
  return keys;
}

function formatRows(rows: Record<string, string | boolean>[]): string {
  if (rows.length === 0) return 'no keys\n';
  const headers = Object.keys(rows[0] ?? {});
  const cells = [headers.map((h) => h.toUpperCase()), ...rows.map((r) => headers.map((h) => String(r[h])))];
  const widths = headers.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return `${cells
    .map((row) =>
      row
        .map((cell, i) => cell.padEnd(widths[i] ?? 0))
        .join('  ')
        .trimEnd(),
    )
    .join('\n')}\n`;
}
