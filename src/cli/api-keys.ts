/**
 * `corral api-keys create|list|revoke`: the server's API keys over the API (an admin key; `GET apikeys`,
 * `POST apikey/create|delete`), where `corral keys` works on the database without a server. A new key is printed
 * once, on its own line, so that `$(corral api-keys create)` captures it.
 */
import type { Command } from 'commander';
import type { WireApiKey } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { formatTable } from './table.js';

export function makeApiKeysCommand(deps: CliDeps): Command {
  const group = newCommand('api-keys', deps).description(
    "manage the server's API keys through the API (needs an admin key; corral keys works on the database)",
  );

  addClientOptions(group.command('create').description('create an API key; prints the key once'))
    .option('--name <name>', 'a label for the key')
    .option('--owner <owner>', "the owner the key acts as (default: the calling key's)")
    .option('--admin', 'an admin key manages keys and may act for other owners')
    .action((_opts, command: Command) =>
      runWithClient<{ name?: string; owner?: string; admin?: boolean }>(
        deps,
        command,
        async ({ client, opts, json, output }) => {
          const created = await client.createApiKey({
            name: opts.name ?? '',
            admin: opts.admin === true,
            ...(opts.owner === undefined ? {} : { ownerId: opts.owner }),
          });
          output(created, () => `${created.key}\n`);
          if (!json)
            deps.stderr(`API key ${created.id} for owner "${created.ownerId}"; shown only this once\n`);
        },
      ),
    );

  addClientOptions(group.command('list').description("list every owner's API keys (never a key)")).action(
    (_opts, command: Command) =>
      runWithClient(deps, command, async ({ client, output }) => {
        const keys = await client.listApiKeys();
        output({ keys }, () => formatApiKeys(keys));
      }),
  );

  addClientOptions(
    group
      .command('revoke')
      .description('revoke an API key; requests with it fail at once')
      .argument('<id>', 'key id (from list)'),
  ).action((id: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      await client.deleteApiKey(id);
      output({}, () => `revoked API key ${id}\n`);
    }),
  );

  return group;
}

export function formatApiKeys(keys: readonly WireApiKey[]): string {
  if (keys.length === 0) return 'No API keys.\n';
  return formatTable(
    ['ID', 'OWNER', 'NAME', 'ADMIN', 'CREATED', 'LAST USED', 'REVOKED'],
    keys.map((k) => [
      k.id,
      k.ownerId,
      k.name,
      k.admin ? 'yes' : 'no',
      k.createdAt,
      k.lastUsedAt ?? '',
      k.revokedAt ?? '',
    ]),
  );
}
