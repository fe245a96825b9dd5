/**
 * `corral logs -f <endpoint>`: follows an endpoint across scaling with the client's `followEndpointLogs`
 * (src/client/follow.ts, which the dashboard uses too), each line prefixed by its worker id on stdout, the waits and
 * problems on stderr, until the signal aborts (Ctrl-C).
 */
import { type CorralClient, FOLLOW_POLL_MS, followEndpointLogs } from '../client/index.js';
import type { CliDeps } from './deps.js';
import { formatError } from './output.js';

export { FOLLOW_POLL_MS };

export interface FollowOptions {
  client: CorralClient;
  endpointId: string;
  /** The last N lines of the workers there at the start; those that come later are shown from their first line. */
  tail: number | undefined;
  signal: AbortSignal;
  pollMs: number;
  out: Pick<CliDeps, 'stdout' | 'stderr'>;
}

/** Resolves once the signal aborted and every stream has ended; throws when the endpoint cannot be read at first. */
export async function followEndpoint(o: FollowOptions): Promise<void> {
  const { out } = o;
  const end = await followEndpointLogs({
    client: o.client,
    endpointId: o.endpointId,
    tail: o.tail,
    signal: o.signal,
    pollMs: o.pollMs,
    onLine: (workerId, line) => out.stdout(`[${workerId}] ${line}\n`),
    onWorkerError: (workerId, error) =>
      out.stderr(`${formatError(error).replace(/^error: /, `error: worker ${workerId}: `)}\n`),
    onWaiting: (endpoint) => {
      const { state, error } = endpoint.state;
      out.stderr(
        `waiting for a worker of endpoint ${endpoint.id} (endpoint state: ${state}${error === '' ? '' : `, ${error}`})\n`,
      );
    },
    onRetrying: (error) => out.stderr(`${formatError(error)} (still trying)\n`),
  });
  if (end.by === 'deleted') {
    out.stderr(`${formatError(end.error)}\n`);
    process.exitCode = 1;
  }
}
