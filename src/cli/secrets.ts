/**
 * `corral secrets set|list|delete`: values for `{{ CORRAL_SECRET_name }}` in env values. The value comes from
 * `--value` or stdin and is never printed.
 */
import type { Command } from 'commander';
import type { WireSecret } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { CliError } from './output.js';
import { formatTable } from './table.js';

export function makeSecretsCommand(deps: CliDeps): Command {
  const group = newCommand('secrets', deps).description(
    'manage secrets that env values reference as {{ CORRAL_SECRET_name }}',
  );

  addClientOptions(
    group
      .command('set')
      .description('create a secret or replace its value (read from stdin unless --value is given)')
      .argument('<name>', 'letters, digits, _ and -; referenced as {{ CORRAL_SECRET_name }}'),
  )
    .option('--value <value>', 'the value (visible in shell history and ps; stdin is safer)')
    .action((name: string, _opts, command: Command) =>
      runWithClient<{ value?: string }>(deps, command, async ({ client, opts, output }) => {
        const value = opts.value ?? (await deps.readStdin()).replace(/\r?\n$/, '');
        if (value === '') throw new CliError('no value: pipe it on stdin or pass --value');
        const saved = await client.saveSecret(name, value);
        output(
          saved,
          () =>
            `${saved.replaced ? 'replaced' : 'saved'} secret ${saved.name} ` +
            `(reference it in env values as {{ CORRAL_SECRET_${saved.name} }})\n`,
        );
      }),
    );

  addClientOptions(
    group.command('list').description('list your secrets (names and times, never values)'),
  ).action((_opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const secrets = await client.listSecrets();
      output({ secrets }, () => formatSecrets(secrets));
    }),
  );

  addClientOptions(
    group
      .command('delete')
      .description('delete a secret no endpoint references')
      .argument('<name>', 'secret name'),
  ).action((name: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      await client.deleteSecret(name);
      output({}, () => `deleted secret ${name}\n`);
    }),
  );

  return group;
}

export function formatSecrets(secrets: readonly WireSecret[]): string {
  if (secrets.length === 0) return 'No secrets.\n';
  return formatTable(
    ['NAME', 'CREATED', 'UPDATED'],
    secrets.map((s) => [s.name, s.createdAt, s.updatedAt]),
  );
}
