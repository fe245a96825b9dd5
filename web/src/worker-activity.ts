/**
 * What an endpoint's workers are doing, in words (pure, tested): the Endpoint page's empty states say it instead of
 * "no workers" while a worker is on its way or resting, the Workers line counts the resting ones apart from the
 * ready ones (a frozen worker is not a broken one: docs/workers.md, Idle tiers), and the Endpoints list says the
 * cause a worker gives beside the endpoint's `deploying · 1 starting`.
 */
import type { WireWorker } from '../../src/client/index.js';

/** What a worker in each state is doing, in the order a person wants to read it: the slowest step first. */
const DOING: [state: string, doing: string][] = [
  ['downloading', 'downloading its models'],
  ['pending', 'waiting for a GPU'],
  ['pulling', 'pulling its image'],
  ['starting', 'starting'],
  ['unhealthy', 'unhealthy'],
  ['running', 'running'],
  ['frozen', 'frozen (a request thaws it in milliseconds)'],
  ['suspended', 'suspended (a request restores it in seconds)'],
  ['draining', 'draining'],
];

const count = (n: number) => `${n} ${n === 1 ? 'worker' : 'workers'}`;

/** Each state's count with what the first of its workers says, in DOING's order; none for a failed or stopped one. */
function activities(workers: readonly Pick<WireWorker, 'state'>[]): string[] {
  return DOING.flatMap(([state, doing]) => {
    const inState = workers.filter((w) => w.state.state === state);
    const first = inState[0];
    if (first === undefined) return [];
    const message = first.state.message === '' ? '' : `: ${first.state.message}`;
    return [`${count(inState.length)} ${doing}${message}`];
  });
}

const noWorkers = (minWorkers: number) =>
  minWorkers === 0 ? 'no workers: the next request or job starts one' : 'no workers';

/**
 * `1 worker starting: health check /health answered 404; 1 worker frozen (...)`; `no workers` only when none is
 * on its way, serving or resting, with how one comes where the endpoint scales from zero.
 */
export function workersActivity(workers: readonly Pick<WireWorker, 'state'>[], minWorkers: number): string {
  const parts = activities(workers);
  return parts.length > 0 ? parts.join('; ') : noWorkers(minWorkers);
}

/**
 * Why the charts are empty: nothing happened yet, or (while a worker is on its way or resting, which the next
 * sample will draw) what the workers are doing.
 */
export function emptyChartsLine(workers: readonly Pick<WireWorker, 'state'>[], minWorkers: number): string {
  const parts = activities(workers);
  return parts.length === 0
    ? `no traffic and no jobs yet, and ${noWorkers(minWorkers)}`
    : `${parts.join('; ')}; the charts begin at the next sample`;
}

/** `1 frozen, 1 suspended`: the workers resting in an idle tier; empty without any. */
export function restingLine(workers: readonly Pick<WireWorker, 'state'>[]): string {
  return ['frozen', 'suspended']
    .map((state) => [state, workers.filter((w) => w.state.state === state).length] as const)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`)
    .join(', ');
}

/**
 * Where the cause of an endpoint's state is said, most telling first: a worker's `state.message`, the field the CLI
 * prints whole while it waits (a health probe's answer, an exit, a pull's progress, a model download's progress, the
 * GPU it waits for).
 */
const CAUSE_STATES = ['unhealthy', 'failed', 'starting', 'pulling', 'downloading', 'pending'];

/**
 * `worker w-1: health check GET /health answered 404`: the first cause a worker gives that the endpoint's own
 * message does not already say; empty without one. A failed worker's cause counts only while the endpoint is not
 * serving (a replaced worker's is history by then).
 */
export function stateCause(endpoint: {
  state: { state: string; message: string };
  workers: readonly Pick<WireWorker, 'id' | 'state'>[];
}): string {
  for (const state of CAUSE_STATES) {
    if (state === 'failed' && endpoint.state.state === 'serving') continue;
    const worker = endpoint.workers.find(
      (w) =>
        w.state.state === state &&
        w.state.message !== '' &&
        !endpoint.state.message.includes(w.state.message),
    );
    if (worker) return `worker ${worker.id}: ${worker.state.message}`;
  }
  return '';
}
