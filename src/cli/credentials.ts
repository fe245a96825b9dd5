/**
 * `corral credentials save|list|delete`: private-registry logins for `image.authId`. The password comes from stdin
 * or CORRAL_REGISTRY_PASSWORD, never from a flag.
 */
import type { Command } from 'commander';
import type { WireCredential } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { CliError } from './output.js';
import { formatTable } from './table.js';

export const PASSWORD_ENV = 'CORRAL_REGISTRY_PASSWORD';

export function makeCredentialsCommand(deps: CliDeps): Command {
  const group = newCommand('credentials', deps).description('manage container registry credentials');

  addClientOptions(
    group.command('save').description('save registry credentials; prints the id for image.authId'),
  )
    .requiredOption('--name <name>', 'a name for these credentials')
    .requiredOption('--username <user>', 'registry username')
    .option('--password-stdin', `read the password from stdin (else env ${PASSWORD_ENV})`)
    .action((_opts, command: Command) =>
      runWithClient<{ name: string; username: string; passwordStdin?: boolean }>(
        deps,
        command,
        async ({ client, opts, output }) => {
          const password = await readPassword(deps, opts.passwordStdin === true);
          const saved = await client.saveCredential({ name: opts.name, username: opts.username, password });
          output(saved, () => `saved credentials ${saved.id} (use it as image.authId)\n`);
        },
      ),
    );

  addClientOptions(group.command('list').description('list saved registry credentials')).action(
    (_opts, command: Command) =>
      runWithClient(deps, command, async ({ client, output }) => {
        const auths = await client.listCredentials();
        output({ auths }, () => formatCredentials(auths));
      }),
  );

  addClientOptions(
    group.command('delete').description('delete registry credentials').argument('<id>', 'credentials id'),
  ).action((id: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      await client.deleteCredential(id);
      output({}, () => `deleted credentials ${id}\n`);
    }),
  );

  return group;
}

/** The password from stdin (one trailing newline dropped) or the environment; never from a flag. */
async function readPassword(deps: CliDeps, fromStdin: boolean): Promise<string> {
  const password = fromStdin ? (await deps.readStdin()).replace(/\r?\n$/, '') : deps.env[PASSWORD_ENV];
  if (password === undefined || password === '') {
    throw new CliError(
      fromStdin ? 'no password on stdin' : `no password: pass --password-stdin or set ${PASSWORD_ENV}`,
    );
  }
  return password;
}

export function formatCredentials(auths: readonly WireCredential[]): string {
  if (auths.length === 0) return 'No registry credentials.\n';
  return formatTable(
    ['ID', 'NAME', 'USERNAME', 'CREATED'],
    auths.map((a) => [a.id, a.name, a.username, a.createdAt]),
  );
}
