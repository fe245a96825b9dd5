/** `corral models list`: the Hugging Face models in the server's cache (docs/models.md), over `GET models`. */
import type { Command } from 'commander';
import type { WireCachedModel } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { formatTable } from './table.js';

export function makeModelsCommand(deps: CliDeps): Command {
  const models = newCommand('models', deps).description("the Hugging Face models in this server's cache");
  models.addCommand(
    addClientOptions(
      newCommand('list', deps).description(
        'the cached models (an admin key: all; any other: those your endpoints name), size, last use, users',
      ),
    ).action((_opts, command: Command) =>
      runWithClient(deps, command, async ({ client, output }) => {
        const answer = await client.listModels();
        output(answer, () => formatModels(answer.models));
      }),
    ),
  );
  return models;
}

const gigabytes = (bytes: number): string => `${(bytes / 1e9).toFixed(1)} GB`;

function formatModels(models: readonly WireCachedModel[]): string {
  if (models.length === 0) return 'No cached models.\n';
  return formatTable(
    ['MODEL', 'REVISION', 'COMMIT', { header: 'SIZE', align: 'right' }, 'LAST USED', 'ENDPOINTS'],
    models.map((model) => [
      model.name,
      model.revision,
      model.commit.slice(0, 12),
      model.download
        ? `${gigabytes(model.download.bytesDone)} of ${gigabytes(model.download.bytesTotal)}`
        : gigabytes(model.bytes),
      model.lastUsedAt.replace('T', ' ').slice(0, 19),
      model.endpoints.map((endpoint) => endpoint.endpointName).join(', ') || '-',
    ]),
  );
}
