/**
 * `corral status` (admin key): the replicas serving on the server's database, which one runs the controller and
 * since when, and each one's gateway load at its last heartbeat (`GET cluster`, docs/operations.md).
 */
import type { Command } from 'commander';
import type { WireCluster } from '../client/index.js';
import { addClientOptions, newCommand, runWithClient } from './client-options.js';
import type { CliDeps } from './deps.js';
import { type Column, formatTable } from './table.js';

export function makeStatusCommand(deps: CliDeps): Command {
  return addClientOptions(
    newCommand('status', deps).description(
      'show the replicas serving on the database, which one runs the controller and since when (admin key)',
    ),
  ).action((_opts, command: Command) =>
    runWithClient(deps, command, async ({ client, output }) => {
      const cluster = await client.getCluster();
      output(cluster, () => formatCluster(cluster));
    }),
  );
}

export function formatCluster(cluster: WireCluster): string {
  const leader = cluster.leader
    ? `leader: ${cluster.leader.replica} since ${cluster.leader.since} (term ${cluster.leader.token})`
    : 'leader: none (no replica holds the controller lease now)';
  const columns: Column[] = [
    { header: 'REPLICA' },
    { header: 'HOST' },
    { header: 'PID', align: 'right' },
    { header: 'STARTED' },
    { header: 'LAST SEEN' },
    { header: 'STATE' },
    { header: 'IN FLIGHT', align: 'right' },
    { header: 'QUEUED', align: 'right' },
    { header: 'API' },
  ];
  const rows = cluster.replicas.map((r) => [
    `${r.id}${r.id === cluster.self ? ' *' : ''}`,
    r.host,
    String(r.pid),
    r.startedAt,
    r.lastSeenAt,
    `${r.alive ? 'alive' : 'silent'}${r.leader ? ', leader' : ''}`,
    String(r.inFlight),
    String(r.queued),
    r.apiUrl,
  ]);
  return `database: ${cluster.database}\n${leader}\n\n${formatTable(columns, rows)}(* the replica that answered)\n`;
}
