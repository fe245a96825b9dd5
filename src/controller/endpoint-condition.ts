/**
 * What the gateway must know of one endpoint beyond its routable workers, decided from its status and workers: why
 * a request that needs a new worker cannot get one (failed, `maxNum: 0`, the runtime unreachable, its owner's
 * budget spent), else what its
 * requests wait for; and how an endpoint's status reads while the runtime cannot be reached. Pure.
 */
import type { Endpoint, EndpointState, StateReport } from '../domain/endpoint.js';
import type { EndpointCondition, EndpointRefusal } from '../ports/routing-view.js';
import { isActive, type ManagedWorker } from './workers/managed-worker.js';

export interface ConditionInput {
  endpoint: Endpoint;
  /** The status this pass reports (after statusDuringOutage). */
  status: StateReport<EndpointState>;
  workers: readonly ManagedWorker[];
  /** RuntimeOutage's text while the runtime cannot be reached, else undefined. */
  runtimeOutage: string | undefined;
  /** The owner's BUDGET_EXCEEDED sentence while its budget is spent. */
  budgetExceeded?: string | undefined;
}

/** The endpoint's condition, or undefined when there is nothing to say (it serves, or it is stopped). */
export function endpointCondition(input: ConditionInput): EndpointCondition | undefined {
  const { endpoint, status } = input;
  // A stopped endpoint is the gateway's own answer (ENDPOINT_STOPPED), from the endpoint itself.
  if (endpoint.desired === 'stopped') return undefined;
  const refusal = refusalOf(input);
  if (refusal) return { refusal };
  const waiting = newest(
    input.workers.filter((w) => isActive(w) && w.state !== 'running' && w.message !== ''),
  );
  const waitingFor = waiting?.message ?? (status.state === 'deploying' ? status.message : undefined);
  return waitingFor ? { waitingFor } : undefined;
}

function refusalOf({
  endpoint,
  status,
  workers,
  runtimeOutage,
  budgetExceeded,
}: ConditionInput): EndpointRefusal | undefined {
  const lastWorkerMessage = newest(workers.filter((w) => !isServing(w) && w.message !== ''))?.message ?? '';
  if (status.state === 'failed') {
    const kind =
      status.error === 'INSUFFICIENT_GPU'
        ? 'no-capacity'
        : status.error === RUNTIME_UNAVAILABLE
          ? 'runtime-unavailable'
          : 'failed';
    return { kind, reason: status.error, message: status.message, lastWorkerMessage };
  }
  if (endpoint.spec.workers.maxWorkers === 0) {
    return { kind: 'no-workers', reason: 'NO_WORKERS', message: NO_WORKERS_MESSAGE, lastWorkerMessage };
  }
  if (runtimeOutage !== undefined) {
    return {
      kind: 'runtime-unavailable',
      reason: RUNTIME_UNAVAILABLE,
      message: runtimeOutage,
      lastWorkerMessage,
    };
  }
  // Only while no worker of it is up or on its way: those it has (minNum's, or started before) serve on.
  if (budgetExceeded !== undefined && !workers.some((w) => isActive(w) && w.budgetHeld !== true)) {
    return { kind: 'budget-exceeded', reason: 'BUDGET_EXCEEDED', message: budgetExceeded, lastWorkerMessage };
  }
  return undefined;
}

export const RUNTIME_UNAVAILABLE = 'RUNTIME_UNAVAILABLE';
export const NO_WORKERS_MESSAGE = 'maxNum is 0: the endpoint can have no worker';

/**
 * The status while the runtime cannot be reached: an endpoint with a healthy worker still serves (and says that no
 * new worker can start); one without is `failed (RUNTIME_UNAVAILABLE)` until the runtime answers again. Stopped and
 * otherwise failed endpoints keep their own reason.
 */
export function statusDuringOutage(
  status: StateReport<EndpointState>,
  workers: readonly ManagedWorker[],
  outage: string,
): StateReport<EndpointState> {
  if (status.state === 'stopped' || status.state === 'failed') return status;
  if (workers.some(isServing)) {
    return { ...status, message: `${status.message}; ${outage}: no new worker can start` };
  }
  return { state: 'failed', error: RUNTIME_UNAVAILABLE, message: outage };
}

function isServing(worker: ManagedWorker): boolean {
  return worker.state === 'running' && worker.healthy;
}

function newest(workers: readonly ManagedWorker[]): ManagedWorker | undefined {
  let found: ManagedWorker | undefined;
  for (const worker of workers) if (!found || worker.createdAt >= found.createdAt) found = worker;
  return found;
}
