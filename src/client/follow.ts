/**
 * Following an endpoint's log across scaling: every poll looks at the endpoint's workers, attaches to each new one
 * that has a container as it appears, keeps following those it has, and waits while there are none, until the
 * signal aborts or the endpoint is deleted. What to do with each line and each problem is the caller's (the CLI
 * prints them, the dashboard shows them); this part uses no Node-only API.
 */
import type { WireEndpoint } from '../contract/wire.js';
import type { CorralClient } from './client.js';
import { CorralApiError } from './errors.js';

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

export interface FollowEndpointOptions {
  client: Pick<CorralClient, 'getEndpoint' | 'streamWorkerLog'>;
  endpointId: string;
  /** The last N lines of the workers there at the start; those that come later are shown from their first line. */
  tail: number | undefined;
  signal: AbortSignal;
  /** Default FOLLOW_POLL_MS. */
  pollMs?: number;
  /** One line of one worker's log, as it arrives. */
  onLine(workerId: string, line: string): void;
  /** A worker's log is followed from now on. */
  onJoin?(workerId: string): void;
  /** A worker's stream ended with an error (not by the signal). */
  onWorkerError?(workerId: string, error: unknown): void;
  /** The endpoint has no worker yet and none is followed: said once. */
  onWaiting?(endpoint: WireEndpoint<number>): void;
  /** The endpoint could not be read (the API away, say); it is tried again. Said once per distinct message. */
  onRetrying?(error: unknown): void;
}

/** How the follow ended: the caller's signal, or the endpoint's deletion (with the API's error). */
export type FollowEnd = { by: 'signal' } | { by: 'deleted'; error: unknown };

/**
 * Resolves once the signal aborted (or the endpoint was deleted) and every stream has ended; throws when the
 * endpoint cannot be read at first.
 */
export async function followEndpointLogs(o: FollowEndpointOptions): Promise<FollowEnd> {
  const { client, endpointId } = o;
  // Ended by the caller's signal, or here when the endpoint is deleted.
  const stop = new AbortController();
  const signal = stop.signal;
  o.signal.addEventListener('abort', () => stop.abort(), { once: true });
  if (o.signal.aborted) stop.abort();
  const attached = new Set<string>();
  const streams: Promise<void>[] = [];
  let waitingSaid = false;
  let lastProblem = '';
  let end: FollowEnd = { by: 'signal' };
  const attach = async (workerId: string, tail: number | undefined) => {
    try {
      for await (const line of client.streamWorkerLog(endpointId, workerId, { follow: true, tail, signal })) {
        o.onLine(workerId, line);
      }
    } catch (error) {
      if (!signal.aborted) o.onWorkerError?.(workerId, error);
    }
  };
  for (let first = true; !signal.aborted; first = false) {
    let workers: WireEndpoint<number>['workers'];
    try {
      const endpoint = await client.getEndpoint(endpointId);
      workers = endpoint.workers;
      if (workers.length === 0 && attached.size === 0 && !waitingSaid) {
        o.onWaiting?.(endpoint);
        waitingSaid = true;
      }
      lastProblem = '';
    } catch (error) {
      // An unknown endpoint at first, or one deleted meanwhile, ends the follow; the API away is waited out.
      if (first || (error instanceof CorralApiError && error.reason === 'ENDPOINT_NOT_FOUND')) {
        if (streams.length === 0) throw error;
        end = { by: 'deleted', error };
        stop.abort();
        break;
      }
      const problem = error instanceof Error ? error.message : String(error);
      if (problem !== lastProblem) o.onRetrying?.(error);
      lastProblem = problem;
      workers = [];
    }
    for (const worker of workers) {
      if (attached.has(worker.id) || !HAS_OUTPUT.has(worker.state.state)) continue;
      attached.add(worker.id);
      o.onJoin?.(worker.id);
      streams.push(attach(worker.id, first ? o.tail : undefined));
    }
    await pause(o.pollMs ?? FOLLOW_POLL_MS, signal);
  }
  await Promise.all(streams);
  return end;
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
