/**
 * `corral invoke-keys create|list|revoke`: keys that call one endpoint's URL and nothing else (a Corral extension).
 * A new key is printed once, on its own line, so that `$(corral invoke-keys create ID)` captures it.
 */
import type { Command } from 'commander';
import type { WireInvokeKey } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { withEndpointId } from './endpoint-ref.js';
import { formatTable } from './table.js';

export function makeInvokeKeysCommand(deps: CliDeps): Command {
  const group = newCommand('invoke-keys', deps).description(
    "manage invoke keys: keys that call one endpoint's URL and nothing else",
  );

  addClientOptions(
    group
      .command('create')
      .description('create an invoke key for an endpoint; prints the key once')
      .argument('<endpoint>', 'endpoint id, appName or name'),
  )
    .option('--name <name>', 'a label for the key')
    .action((endpointId: string, _opts, command: Command) =>
      runWithClient<{ name?: string }>(deps, command, async ({ client, opts, json, output }) => {
        const created = await withEndpointId(client, endpointId, (id) =>
          client.createInvokeKey(id, opts.name ?? ''),
        );
        output(created, () => `${created.key}\n`);
        if (!json) deps.stderr(`invoke key ${created.id} for endpoint ${endpointId}; shown only this once\n`);
      }),
    );

  addClientOptions(
    group
      .command('list')
      .description("list an endpoint's invoke keys")
      .argument('<endpoint>', 'endpoint id, appName or name'),
  ).action((endpointId: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const keys = await withEndpointId(client, endpointId, (id) => client.listInvokeKeys(id));
      output({ keys }, () => formatInvokeKeys(keys));
    }),
  );

  addClientOptions(
    group
      .command('revoke')
      .description('revoke an invoke key (refused by the gateway within 10 seconds)')
      .argument('<endpoint>', 'endpoint id, appName or name')
      .argument('<key-id>', 'invoke key id (from list)'),
  ).action((endpointId: string, keyId: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      await withEndpointId(client, endpointId, (id) => client.revokeInvokeKey(id, keyId));
      output({}, () => `revoked invoke key ${keyId}\n`);
    }),
  );

  return group;
}

export function formatInvokeKeys(keys: readonly WireInvokeKey[]): string {
  if (keys.length === 0) return 'No invoke keys.\n';
  return formatTable(
    ['ID', 'NAME', 'CREATED', 'REVOKED'],
    keys.map((k) => [k.id, k.name, k.createdAt, k.revokedAt ?? '']),
  );
}
