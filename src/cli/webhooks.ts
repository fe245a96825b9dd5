/**
 * `corral webhooks secret show|rotate`: the secret that signs an endpoint's job webhooks (docs/jobs.md, webhooks).
 * The secret is printed where the API answers it, to stdout alone, and never logged.
 */
import type { Command } from 'commander';
import type { WireWebhookSecret } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { withEndpointId } from './endpoint-ref.js';

const ENDPOINT_REF = "the endpoint's id, appName or name";

export function makeWebhooksCommand(deps: CliDeps): Command {
  const group = newCommand('webhooks', deps).description("manage what signs endpoints' job webhooks");
  const secret = group.command('secret').description("an endpoint's webhook signing secret (whsec_...)");

  addClientOptions(
    secret
      .command('show')
      .description("print the secret that signs the endpoint's webhooks (made on first use)")
      .argument('<endpoint>', ENDPOINT_REF),
  ).action((ref: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const found = await withEndpointId(client, ref, (id) => client.getWebhookSecret(id));
      output(found, () => formatSecret(found, 'made'));
    }),
  );

  addClientOptions(
    secret
      .command('rotate')
      .description('replace the secret: every delivery attempt from now on is signed with the new one')
      .argument('<endpoint>', ENDPOINT_REF),
  ).action((ref: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const rotated = await withEndpointId(client, ref, (id) => client.rotateWebhookSecret(id));
      output(rotated, () => formatSecret(rotated, 'rotated'));
    }),
  );

  return group;
}

/** The secret on a line of its own (for `| head -1` and copying), then where it came from. */
function formatSecret(secret: WireWebhookSecret, made: 'made' | 'rotated'): string {
  return `${secret.secret}\n${made} ${secret.createdAt} for endpoint ${secret.endpointId}; verify deliveries with it (docs/jobs.md, webhooks)\n`;
}
