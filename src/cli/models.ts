/**
 * `corral models list|pull|rm`: the Hugging Face models in the server's cache and, on Kubernetes with node agents,
 * each GPU node's (a MACHINE column then; docs/models.md), over `GET models`,
 * `POST models` (a pull, followed until its download ends: one line redrawn on a terminal, a line every 10 s
 * otherwise) and `DELETE models/{org}/{name}`.
 */
import type { Command } from 'commander';
import type { CorralClient, WireCachedModel } from '../client/index.js';
import { DEFAULT_MODEL_REVISION } from '../domain/model-refs.js';
import { progressMessage } from '../domain/transfer-text.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { CliError } from './output.js';
import { formatTable } from './table.js';
import { POLL_INTERVAL_MS } from './wait.js';

/** Off a terminal, a progress line at most this often. */
const LINE_EVERY_MS = 10_000;
/** Polls in a row that may not find the model (its download still resolving) before the pull is said to have failed. */
const MISSING_POLLS = 10;

interface PullOptions {
  revision?: string;
  allow?: string[];
  tokenSecret?: string;
  wait: boolean;
}

export function makeModelsCommand(deps: CliDeps): Command {
  const models = newCommand('models', deps).description("the Hugging Face models in this server's cache");
  models.addCommand(
    addClientOptions(
      newCommand('list', deps).description(
        'the cached models (an admin key: all; any other: those your endpoints name or you pulled), machine, size, last use, users',
      ),
    ).action((_opts, command: Command) =>
      runWithClient(deps, command, async ({ client, output }) => {
        const answer = await client.listModels();
        output(answer, () => formatModels(answer.models));
      }),
    ),
  );
  models.addCommand(
    addClientOptions(
      newCommand('pull', deps)
        .description(
          "download a model into the server's cache with your token, showing progress until it is there",
        )
        .argument('<model>', 'org/name, as on the hub')
        .option(
          '--revision <revision>',
          `a branch, tag, commit or refs/pr/N (default ${DEFAULT_MODEL_REVISION})`,
        )
        .option(
          '--allow <pattern>',
          'only files matching this glob (repeatable; default every file)',
          (pattern: string, patterns: string[] = []) => [...patterns, pattern],
        )
        .option('--token-secret <secret>', 'your secret holding a hub token, for gated and private models')
        .option('--no-wait', 'return once the download has begun'),
    ).action((name: string, _opts, command: Command) =>
      runWithClient<PullOptions>(deps, command, async ({ client, opts, output }) => {
        const pulled = await client.pullModel({
          name,
          ...(opts.revision === undefined ? {} : { revision: opts.revision }),
          ...(opts.allow === undefined ? {} : { allowPatterns: opts.allow }),
          ...(opts.tokenSecret === undefined ? {} : { tokenSecret: opts.tokenSecret }),
        });
        const cached = pulled.download === null || !opts.wait ? pulled : await follow(deps, client, pulled);
        output(cached, () =>
          cached.download === null
            ? `model ${cached.name} is cached: ${cachedLine(cached)}\n`
            : `${progressMessage({ ...cached, ...cached.download })} (downloading: corral models list follows it)\n`,
        );
      }),
    ),
  );
  models.addCommand(
    addClientOptions(
      newCommand('rm', deps)
        .description(
          "remove a model from the server's cache and every GPU node's (admin keys; not one an endpoint names)",
        )
        .argument('<model>', 'org/name')
        .option(
          '--revision <revision>',
          'only this revision (a branch, tag, refs/pr/N or commit); default every one',
        ),
    ).action((name: string, _opts, command: Command) =>
      runWithClient<{ revision?: string }>(deps, command, async ({ client, opts, output }) => {
        await client.removeModel(name, opts.revision === undefined ? {} : { revision: opts.revision });
        const what = opts.revision === undefined ? name : `${name} at ${opts.revision}`;
        output({ removed: name, revision: opts.revision ?? null }, () => `removed model ${what}\n`);
      }),
    ),
  );
  return models;
}

/** Polls `GET models` until the pulled revision's download ends; its progress on stderr meanwhile. */
async function follow(
  deps: CliDeps,
  client: CorralClient,
  pulled: WireCachedModel,
): Promise<WireCachedModel> {
  const terminal = deps.terminal.stderr;
  let drawn = false;
  let lineAt = Number.NEGATIVE_INFINITY;
  let missing = 0;
  const show = (model: WireCachedModel & { download: NonNullable<WireCachedModel['download']> }) => {
    const line = progressMessage({ ...model, ...model.download });
    if (terminal) {
      deps.stderr(`\r\x1b[K${line}`);
      drawn = true;
    } else if (deps.now() - lineAt >= LINE_EVERY_MS) {
      deps.stderr(`${line}\n`);
      lineAt = deps.now();
    }
  };
  try {
    let current: WireCachedModel = pulled;
    for (;;) {
      if (current.download === null) return current;
      show({ ...current, download: current.download });
      await deps.sleep(POLL_INTERVAL_MS);
      const found = (await client.listModels()).models.find(
        (model) =>
          model.name === pulled.name && model.commit === pulled.commit && model.machine === pulled.machine,
      );
      if (found) {
        current = found;
        missing = 0;
      } else if (++missing >= MISSING_POLLS) {
        throw new CliError(
          `the download of ${pulled.name} ended without it in the cache; the server's log says why (corral models pull again resumes it)`,
        );
      }
    }
  } finally {
    if (drawn) deps.stderr('\n');
  }
}

const gigabytes = (bytes: number): string => `${(bytes / 1e9).toFixed(1)} GB`;

function cachedLine(model: WireCachedModel): string {
  return `${model.revision} (${model.commit.slice(0, 12)}), ${model.files} files, ${gigabytes(model.bytes)}`;
}

/** What the MACHINE column says of Corral's own cache (a null machine). */
const SERVER_MACHINE = '(server)';

/** The table; with a MACHINE column first where a GPU node's cache is listed (Kubernetes with node agents). */
function formatModels(models: readonly WireCachedModel[]): string {
  if (models.length === 0) return 'No cached models.\n';
  // A server older than the machine field answers none: undefined, as null, is its own cache.
  const perMachine = models.some((model) => (model.machine ?? null) !== null);
  return formatTable(
    [
      ...(perMachine ? ['MACHINE'] : []),
      'MODEL',
      'REVISION',
      'COMMIT',
      { header: 'SIZE', align: 'right' },
      'LAST USED',
      'ENDPOINTS',
    ],
    models.map((model) => [
      ...(perMachine ? [model.machine ?? SERVER_MACHINE] : []),
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
