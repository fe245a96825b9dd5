/**
 * Worker affinity (issue 35), as RunPod's load-balancing endpoints take it: a request naming a worker in
 * `X-Corral-Worker-Id` or `X-Runpod-Worker-Id` (the id an earlier answer named: worker-headers.ts). `<id>` (soft):
 * sent to that worker when it has a free slot, else to any. `strict <id>`: to that worker alone, waiting in the
 * queue for a slot on it (dispatcher.ts) up to the queue timeout, then 400 AFFINITY_TIMEOUT. `strict-resume <id>`:
 * as strict, and a frozen or suspended worker is woken for it (the controller's planner, told through the queue
 * signals). A strict request naming a worker that does not exist gets 404 AFFINITY_WORKER_GONE (decided here).
 */
import type { IncomingMessage } from 'node:http';
import type { WorkerState } from '../domain/worker.js';
import { GatewayError } from '../errors/gateway-catalogue.js';

export type AffinityMode = 'soft' | 'strict' | 'strict-resume';

export interface Affinity {
  mode: AffinityMode;
  workerId: string;
}

const AFFINITY_HEADERS = ['x-corral-worker-id', 'x-runpod-worker-id'] as const;

/** A header's value as an affinity: `<id>`, `strict <id>` or `strict-resume <id>`; undefined when empty or malformed. */
export function parseAffinity(value: string | undefined): Affinity | undefined {
  const words = (value ?? '').trim().split(/\s+/);
  const [first = '', second, extra] = words;
  if (first === '' || extra !== undefined) return undefined;
  if (second === undefined) return { mode: 'soft', workerId: first };
  const mode = first.toLowerCase();
  return mode === 'strict' || mode === 'strict-resume' ? { mode, workerId: second } : undefined;
}

/** The affinity a request asks for: Corral's header first, then RunPod's. */
export function affinityOf(req: IncomingMessage): Affinity | undefined {
  for (const name of AFFINITY_HEADERS) {
    const value = req.headers[name];
    const affinity = parseAffinity(Array.isArray(value) ? value[0] : value);
    if (affinity) return affinity;
  }
  return undefined;
}

/** What the store holds of the worker a strict request names. */
export interface NamedWorker {
  endpointId: string;
  state: WorkerState;
}

/** A worker in one of these states never serves again: for affinity it is gone. */
const GONE_STATES: ReadonlySet<WorkerState> = new Set(['draining', 'stopped', 'failed']);

/**
 * 404 AFFINITY_WORKER_GONE (RunPod's `affinity_worker_gone`) when the worker a strict request of `endpointId` names
 * does not exist (`worker` undefined: no record), belongs to another endpoint, or is on its way out; undefined when
 * it may serve (running, starting, frozen, suspended...): the request waits for it.
 */
export function affinityWorkerGone(
  affinity: Affinity,
  endpointId: string,
  worker: NamedWorker | undefined,
): GatewayError | undefined {
  if (worker && worker.endpointId === endpointId && !GONE_STATES.has(worker.state)) return undefined;
  return new GatewayError(
    'AFFINITY_WORKER_GONE',
    `affinity_worker_gone: worker ${affinity.workerId} of endpoint ${endpointId} does not exist${worker && worker.endpointId === endpointId ? ` (${worker.state})` : ''}`,
    { metadata: { workerId: affinity.workerId } },
  );
}
