/** `corral workers list|metrics|drain`: an endpoint's workers as the API reports them, and draining one. */
import type { Command } from 'commander';
import type { WireWorker, WorkerMetrics } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
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
