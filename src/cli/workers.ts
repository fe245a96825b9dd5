/**
 * `corral workers list|ended|metrics|drain`: an endpoint's workers as the API reports them, those that ended with
 * their last output, and draining one.
 */
import type { Command } from 'commander';
import type { CorralClient, WireEndedWorker, WireWorker, WorkerMetrics } from '../client/index.js';
import { parseCount } from './args.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { utcText } from './endpoint-format.js';
import { resolveEndpoint, withEndpointId } from './endpoint-ref.js';
import { formatKeyValues, formatTable } from './table.js';
import { healthText } from './worker-health.js';

export function makeWorkersCommand(deps: CliDeps): Command {
  const group = newCommand('workers', deps).description("inspect an endpoint's workers");

  addClientOptions(
    group
      .command('list')
      .description("list an endpoint's workers with their state and health")
      .argument('<endpoint>', 'endpoint id, appName or name'),
  ).action((ref: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const endpoint = await resolveEndpoint(client, ref);
      output(endpoint.workers, () => formatWorkers(endpoint.id, endpoint.workers));
    }),
  );

  addClientOptions(
    group
      .command('ended')
      .description(
        "list an endpoint's workers that ended (the most recent first): when, why, and their last output lines",
      )
      .argument('<endpoint>', 'endpoint id, appName or name')
      .option('--lines <n>', 'last output lines to show of each (0: none)', String(ENDED_LINES)),
  ).action((ref: string, opts: { lines: string }, command: Command) =>
    runWithClient(deps, command, async ({ client, output, json }) => {
      const lines = parseCount(opts.lines, '--lines') ?? ENDED_LINES;
      const { endpointId, ended } = await withEndpointId(client, ref, async (id) => ({
        endpointId: id,
        ended: await client.listEndedWorkers(id),
      }));
      // --json answers as the API does; the lines are read only for people.
      const kept = json || lines === 0 ? [] : await lastLinesOf(client, endpointId, ended, lines);
      output(ended, () => formatEndedWorkers(ref, ended, kept));
    }),
  );

  addClientOptions(
    group
      .command('metrics')
      .description("show one worker's state, GPUs and resource use")
      .argument('<endpoint>', 'endpoint id, appName or name')
      .argument('<worker>', 'worker id (see corral workers list)'),
  ).action((ref: string, workerId: string, _opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const metrics = await withEndpointId(client, ref, (id) => client.getWorkerMetrics(id, workerId));
      output(metrics, () => formatWorkerMetrics(metrics));
    }),
  );

  addClientOptions(
    group
      .command('drain')
      .description(
        'take a worker out of service: no new requests, it finishes those in flight and is replaced',
      )
      .argument('<worker>', 'worker id (see corral workers list)')
      .option('--undrain', 'put a drained worker back into service (before it is removed)'),
  ).action((workerId: string, opts: { undrain?: boolean }, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const drain = opts.undrain !== true;
      await client.drainWorker(workerId, drain);
      output({ workerID: workerId, drain }, () =>
        drain
          ? `Worker ${workerId} is draining: it takes no new requests and is replaced.\n`
          : `Worker ${workerId} is back in service (unless its removal had begun).\n`,
      );
    }),
  );

  return group;
}

export function formatWorkers(endpointId: string, workers: readonly WireWorker[]): string {
  if (workers.length === 0) return `Endpoint ${endpointId} has no workers.\n`;
  return formatTable(
    ['ID', 'STATE', 'HEALTHY', 'ERROR', 'MESSAGE'],
    workers.map((w) => [
      w.id,
      w.state.state,
      healthText(w.state.state, w.healthy),
      w.state.error,
      w.state.message,
    ]),
  );
}

/** Last output lines shown of each ended worker by default. */
const ENDED_LINES = 5;

/** What could be read of one ended worker's kept output: its last lines, or why there are none. */
export type EndedOutput = { lines: string[] } | { error: string };

/** The last `tail` lines kept of each worker, read at once; the API's first line (`[corral] worker ... ended`) left out. */
async function lastLinesOf(
  client: CorralClient,
  endpointId: string,
  ended: readonly WireEndedWorker[],
  tail: number,
): Promise<EndedOutput[]> {
  return Promise.all(
    ended.map(async (w): Promise<EndedOutput> => {
      try {
        const lines: string[] = [];
        for await (const line of client.streamWorkerLog(endpointId, w.id, { tail })) lines.push(line);
        return { lines: lines[0]?.startsWith('[corral] worker ') ? lines.slice(1) : lines };
      } catch (error) {
        return { error: error instanceof Error ? error.message : String(error) };
      }
    }),
  );
}

/**
 * One block per ended worker: when it ended, whether it failed and why (the reason holds the exit code), then its
 * last output lines indented; a last line says how to read the whole output.
 */
export function formatEndedWorkers(
  ref: string,
  ended: readonly WireEndedWorker[],
  outputs: readonly EndedOutput[],
): string {
  if (ended.length === 0) return `Endpoint ${ref} has no ended workers whose output is kept.\n`;
  const blocks = ended.map((w, i) => {
    const how = w.failed ? 'failed' : 'removed';
    const head = `${w.id}  ended ${utcText(w.endedAt)}, ${how}: ${w.reason === '' ? 'no reason kept' : w.reason}\n`;
    const out = outputs[i];
    if (out === undefined) return head;
    if ('error' in out) return `${head}  (its output could not be read: ${out.error})\n`;
    if (out.lines.length === 0) return `${head}  (no output)\n`;
    const older = w.truncated ? ' (older lines were not kept)' : '';
    return `${head}  last ${out.lines.length === 1 ? 'line' : `${out.lines.length} lines`}${older}:\n${out.lines
      .map((line) => `    ${line}\n`)
      .join('')}`;
  });
  return `${blocks.join('\n')}\nWhole output: corral logs ${ref} --worker <id>\n`;
}

export function formatWorkerMetrics(m: WorkerMetrics): string {
  return formatKeyValues([
    ['ID', m.id],
    ['State', m.state],
    ['Healthy', healthText(m.state, m.healthy)],
    ['GPUs', m.gpus.length === 0 ? 'none' : m.gpus.join(', ')],
    ['Requests', m.requests === null ? 'unknown' : String(m.requests)],
    ['In flight', m.inFlight === null ? 'unknown' : String(m.inFlight)],
    ['CPU', m.cpuPercent === null ? 'unknown' : `${round(m.cpuPercent)}%`],
    ['Memory', m.memoryBytes === null ? 'unknown' : formatBytes(m.memoryBytes)],
    ['Started', m.startedAt],
    ['Ready', m.readyAt ?? 'not yet'],
  ]);
}

const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB'] as const;

/** `512 B`, `1.5 MiB`, `7.8 GiB`: binary units, one decimal above bytes. */
export function formatBytes(bytes: number): string {
  let value = bytes;
  let unit = 0;
  while (Math.abs(value) >= 1024 && unit < UNITS.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return unit === 0 ? `${value} B` : `${value.toFixed(1)} ${UNITS[unit]}`;
}

function round(value: number): string {
  return String(Math.round(value * 10) / 10);
}
