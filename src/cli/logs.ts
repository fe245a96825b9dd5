/**
 * `corral logs`: workers' log lines streamed to stdout, running or ended (their kept last output); with `-f` it
 * follows the endpoint across scaling (logs-follow.ts). The first Ctrl-C ends the streams cleanly.
 */
import type { Command } from 'commander';
import {
  CorralApiError,
  type CorralClient,
  type WireEndedWorker,
  type WireEndpoint,
} from '../client/index.js';
import { parseCount } from './args.js';
import { DEFAULT_API_URL, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { resolveEndpoint } from './endpoint-ref.js';
import { FOLLOW_POLL_MS, followEndpoint } from './logs-follow.js';
import { CliError, formatError } from './output.js';

/**
 * Calls `stop` when the user interrupts (Ctrl-C) while logs stream; returns a function that stops
 * listening. Injectable so tests can interrupt without sending a signal to the test process.
 */
export type InterruptListener = (stop: () => void) => () => void;

/** The first SIGINT ends the streams cleanly; a second one, with no listener left, kills as usual. */
export const listenForSigint: InterruptListener = (stop) => {
  const onSigint = (): void => stop();
  process.once('SIGINT', onSigint);
  return () => {
    process.off('SIGINT', onSigint);
  };
};

interface LogsFlags {
  worker?: string;
  follow?: boolean;
  tail?: string;
}

/**
 * `corral logs <endpoint> [--worker id] [-f] [--tail N]`: a worker's log lines on stdout as they
 * arrive. Without --worker: the endpoint's only worker, or every worker at once with each line
 * prefixed by `[<worker id>] `; with no worker left, the kept output of the one that ended last.
 * Without --worker, -f follows the endpoint across scaling until Ctrl-C, every line prefixed.
 */
export function makeLogsCommand(
  deps: CliDeps,
  onInterrupt: InterruptListener = listenForSigint,
  pollMs = FOLLOW_POLL_MS,
): Command {
  return newCommand('logs', deps)
    .description(
      "print an endpoint's worker logs (every worker, each line prefixed, unless --worker); a worker that ended " +
        'shows its kept last output',
    )
    .argument('<endpoint>', 'endpoint id, appName or name (the id with --worker)')
    .option('--worker <id>', 'only this worker, running or ended (see corral workers list)')
    .option('-f, --follow', 'keep printing new lines, attaching to new workers as they start, until Ctrl-C')
    .option('--tail <n>', 'start with the last N lines of each worker')
    .option('--api-url <url>', `Corral API base URL (env CORRAL_API_URL, default ${DEFAULT_API_URL})`)
    .option('--api-key <key>', 'API key (env CORRAL_API_KEY)')
    .action((ref: string, _opts, command: Command) =>
      runWithClient<LogsFlags>(deps, command, async ({ client, opts }) => {
        const tail = parseCount(opts.tail, '--tail');
        // With --worker, the worker's log is asked for at once: the endpoint must then be given by its id.
        const { worker } = opts;
        const endpoint = worker === undefined ? await resolveEndpoint(client, ref) : undefined;
        const endpointId = endpoint?.id ?? ref;
        const follow = opts.follow === true;
        const controller = new AbortController();
        if (follow && worker === undefined) {
          const stopListening = onInterrupt(() => controller.abort());
          try {
            const out = { stdout: deps.stdout, stderr: deps.stderr };
            await followEndpoint({ client, endpointId, tail, signal: controller.signal, pollMs, out });
          } finally {
            stopListening();
          }
          return;
        }
        // The endpoint was read above (its workers are in it): it is not read a second time.
        const workerIds =
          worker !== undefined ? [worker] : endpoint ? await workersOf(client, endpoint, deps.stderr) : [];
        const stopListening = onInterrupt(() => controller.abort());
        try {
          const stream = (workerId: string) =>
            client.streamWorkerLog(endpointId, workerId, { follow, tail, signal: controller.signal });
          const [only] = workerIds;
          if (workerIds.length === 1 && only !== undefined) {
            for await (const line of stream(only)) deps.stdout(`${line}\n`);
            return;
          }
          // Several workers at once: one failing must not stop the others' lines.
          const results = await Promise.all(
            workerIds.map(async (workerId) => {
              try {
                for await (const line of stream(workerId)) deps.stdout(`[${workerId}] ${line}\n`);
                return true;
              } catch (error) {
                deps.stderr(`${formatError(error).replace(/^error: /, `error: worker ${workerId}: `)}\n`);
                return false;
              }
            }),
          );
          if (results.includes(false)) process.exitCode = 1;
        } finally {
          stopListening();
        }
      }),
    );
}

/** The endpoint's workers; with none left, the one that ended last (saying so on stderr). */
async function workersOf(
  client: CorralClient,
  endpoint: WireEndpoint<number>,
  stderr: (text: string) => void,
): Promise<string[]> {
  if (endpoint.workers.length > 0) return endpoint.workers.map((w) => w.id);
  const [last, ...earlier] = await endedWorkers(client, endpoint.id);
  const { state, error } = endpoint.state;
  const status = `endpoint state: ${state}${error === '' ? '' : `, ${error}`}`;
  if (!last) {
    throw new CliError(
      `endpoint ${endpoint.id} has no workers, so there is no log to show (${status}); ` +
        `its events: corral endpoints log ${endpoint.id}`,
    );
  }
  const others = earlier.length === 0 ? '' : `; other ended workers: ${earlier.map((w) => w.id).join(', ')}`;
  stderr(
    `endpoint ${endpoint.id} has no workers (${status}); the output of worker ${last.id}, which ended last` +
      `${others}\n`,
  );
  return [last.id];
}

/** The endpoint's ended workers; none from a server older than `GET endpoint/worker/ended`. */
async function endedWorkers(client: CorralClient, endpointId: string): Promise<WireEndedWorker[]> {
  try {
    return await client.listEndedWorkers(endpointId);
  } catch (error) {
    if (error instanceof CorralApiError && error.status === 404 && error.reason !== 'ENDPOINT_NOT_FOUND')
      return [];
    throw error;
  }
}
