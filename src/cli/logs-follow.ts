/**
 * `corral logs -f <endpoint>`: follows an endpoint across scaling. It looks at the endpoint's workers every poll,
 * attaches to each new one that has a container as it appears (each line prefixed by its worker id), keeps
 * following those it has, and waits while there are none, until the signal aborts (Ctrl-C).
 */
import { CorralApiError, type CorralClient, type WireWorker } from '../client/index.js';
import type { CliDeps } from './deps.js';
import { formatError } from './output.js';

/** How often the endpoint's workers are looked at for new ones. */
export const FOLLOW_POLL_MS = 1000;

/** Worker states with a container, whose log can be read (a pending or pulling worker has none yet). */
const HAS_OUTPUT: ReadonlySet<string> = new Set([
  'starting',
  'running',
  'unhealthy',
  'draining',
  'stopped',
  'failed',
]);

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
  const { client, endpointId, out } = o;
  // Ended by the caller's signal, or here when the endpoint is deleted.
  const stop = new AbortController();
  const signal = stop.signal;
  o.signal.addEventListener('abort', () => stop.abort(), { once: true });
  if (o.signal.aborted) stop.abort();
  const attached = new Set<string>();
  const streams: Promise<void>[] = [];
  let waitingSaid = false;
  let lastProblem = '';
  const attach = async (workerId: string, tail: number | undefined) => {
    try {
      for await (const line of client.streamWorkerLog(endpointId, workerId, { follow: true, tail, signal })) {
        out.stdout(`[${workerId}] ${line}\n`);
      }
    } catch (error) {
      if (!signal.aborted)
        out.stderr(`${formatError(error).replace(/^error: /, `error: worker ${workerId}: `)}\n`);
    }
  };
  for (let first = true; !signal.aborted; first = false) {
    let workers: WireWorker[];
    try {
      const endpoint = await client.getEndpoint(endpointId);
      workers = endpoint.workers;
      if (workers.length === 0 && attached.size === 0 && !waitingSaid) {
        const { state, error } = endpoint.state;
        out.stderr(
          `waiting for a worker of endpoint ${endpoint.id} (endpoint state: ${state}${error === '' ? '' : `, ${error}`})\n`,
        );
        waitingSaid = true;
      }
      lastProblem = '';
    } catch (error) {
      // An unknown endpoint at first, or one deleted meanwhile, ends the command; the API away is waited out.
      if (first || (error instanceof CorralApiError && error.reason === 'ENDPOINT_NOT_FOUND')) {
        if (streams.length === 0) throw error;
        out.stderr(`${formatError(error)}\n`);
        process.exitCode = 1;
        stop.abort();
        break;
      }
      const problem = formatError(error);
      if (problem !== lastProblem) out.stderr(`${problem} (still trying)\n`);
      lastProblem = problem;
      workers = [];
    }
    for (const worker of workers) {
      if (attached.has(worker.id) || !HAS_OUTPUT.has(worker.state.state)) continue;
      attached.add(worker.id);
      streams.push(attach(worker.id, first ? o.tail : undefined));
    }
    await pause(o.pollMs, signal);
  }
  await Promise.all(streams);
}

function pause(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', done, { once: true });
  });
}
