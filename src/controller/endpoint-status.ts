/** The endpoint's reported `state` (serving, deploying, updating, failed, stopped) from its workers. Pure. */
import type { Endpoint, EndpointState, StateReport } from '../domain/endpoint.js';
import type { WorkerState } from '../domain/worker.js';
import { type BackoffPolicy, type CrashRecord, endpointFailure } from './crashes/backoff.js';
import { NO_WORKERS_MESSAGE } from './endpoint-condition.js';
import { isActive, type ManagedWorker } from './workers/managed-worker.js';

/** What the endpoint's `state` says, derived from its workers and failures. Pure. */
export function endpointStatus(
  endpoint: Endpoint,
  workers: ManagedWorker[],
  crash: CrashRecord,
  policy: BackoffPolicy,
  /** whyNeverPlaceable's answer: set when no placement can ever fit. */
  neverPlaceable: string | undefined,
): StateReport<EndpointState> {
  if (endpoint.desired === 'stopped') return { state: 'stopped', error: '', message: 'stopped by its owner' };
  if (neverPlaceable !== undefined) {
    return { state: 'failed', error: 'INSUFFICIENT_GPU', message: neverPlaceable };
  }
  const active = workers.filter(isActive);
  const current = active.filter((w) => w.revision === endpoint.revision);
  const ready = current.filter((w) => w.state === 'running' && w.healthy);
  const failure = endpointFailure(crash, policy);
  if (failure) {
    // Failed until the run is over (a worker healthy long enough), even while one serves meanwhile.
    const meanwhile = ready.length > 0 ? `; serving meanwhile: ${summary(current)}` : '';
    return { state: 'failed', error: failure.code, message: `${failure.message}${meanwhile}` };
  }

  const oldServing = active.some((w) => w.revision !== endpoint.revision);
  if (oldServing) {
    return {
      state: 'updating',
      error: '',
      message: `rolling out revision ${endpoint.revision}: ${summary(current)}`,
    };
  }
  if (ready.length > 0) return { state: 'serving', error: '', message: servingSummary(current) };
  if (endpoint.spec.workers.maxWorkers === 0 && current.length === 0) {
    return { state: 'serving', error: '', message: NO_WORKERS_MESSAGE };
  }
  // A run of failures: the gap between a failed worker and its replacement is not a change of state, or a flapping
  // worker would write serving/deploying events at each restart (with minNum 0: `scaled to zero` between a failed
  // worker and the next). The endpoint stays as it was until it is failed.
  const was = endpoint.status.state;
  const inRun = crash.failures > 0 && (was === 'serving' || was === 'updating' || was === 'deploying');
  const scaledToZero = endpoint.spec.workers.minWorkers === 0 && current.length === 0;
  if (scaledToZero && !inRun) {
    return { state: 'serving', error: '', message: scaledToZeroMessage(workers) };
  }
  // A worker resting in a tier serves once thawed or restored, which a request or a scale-up starts: the extra
  // workers waiting beside it (for a GPU, say) are a note, not a new deployment.
  const resting = workers.filter((w) => w.revision === endpoint.revision && isResting(w));
  if (resting.length > 0 && !inRun && was === 'serving') {
    return { state: 'serving', error: '', message: servingSummary([...resting, ...current]) };
  }
  if (inRun) {
    const last = `${crash.failures} failed in a row, last: ${crash.lastMessage}`;
    const message = scaledToZero
      ? `a worker failed (${last}); scaled to zero: a request starts a new one`
      : `replacing a failed worker (${last}): ${current.length === 0 ? 'waiting for workers' : summary(current)}`;
    return { state: was, error: '', message };
  }
  return {
    state: 'deploying',
    error: '',
    message: current.length === 0 ? 'waiting for workers' : summary(current),
  };
}

/**
 * A serving endpoint's workers, those it has first and those still coming as a note:
 * "1 running; on the way: 1 pending (needs 1 GPU of h100-80g, 0 free)".
 */
function servingSummary(workers: ManagedWorker[]): string {
  const coming = workers.filter((w) => COMING.has(w.state));
  const others = workers.filter((w) => !COMING.has(w.state));
  return coming.length === 0 ? summary(others) : `${summary(others)}; on the way: ${summary(coming)}`;
}

/** The states of a worker on its way to serve: placed or waiting for a place, pulled, started. */
const COMING: ReadonlySet<WorkerState> = new Set(['pending', 'pulling', 'starting']);

/** "2 running, 1 pending (needs 1 GPU of h100-80g, 0 free)". */
function summary(workers: ManagedWorker[]): string {
  const counts = new Map<string, number>();
  for (const w of workers) counts.set(w.state, (counts.get(w.state) ?? 0) + 1);
  const parts = [...counts].map(([state, n]) => `${n} ${state}`);
  const pending = workers.find((w) => w.state === 'pending' && w.message !== '');
  const why = pending ? ` (${pending.message})` : '';
  return parts.length === 0 ? 'no workers' : `${parts.join(', ')}${why}`;
}

/** `scaled to zero; a request wakes it`, naming the idle workers kept in a tier (docs/workers.md, Idle tiers). */
function scaledToZeroMessage(workers: ManagedWorker[]): string {
  const tiers = (['frozen', 'suspended'] as const)
    .map((state) => [state, workers.filter((w) => w.state === state).length] as const)
    .filter(([, n]) => n > 0)
    .map(([state, n]) => `${n} ${state}`);
  return tiers.length === 0
    ? 'scaled to zero; a request wakes it'
    : `scaled to zero, ${tiers.join(', ')}; a request wakes one`;
}

function isResting(worker: ManagedWorker): boolean {
  return worker.state === 'frozen' || worker.state === 'suspended';
}
