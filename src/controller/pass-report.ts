/**
 * The end of every pass, also of one that could not reach the runtime: the pass's events, the worker rows that
 * changed and the endpoint statuses that differ go to the store, then every endpoint with its routable workers and its condition
 * (why it cannot get a worker, what its requests wait for) goes to the routing table, for the gateway. The end of
 * one endpoint's reconcile does the same for that endpoint alone.
 */
import type { Endpoint, EndpointState, StateReport } from '../domain/endpoint.js';
import type { NewEvent } from '../domain/records.js';
import type { EndpointCondition } from '../ports/routing-view.js';
import type { Store } from '../store/store.js';
import type { WriteFence } from './controller-options.js';
import { endpointCondition, statusDuringOutage } from './endpoint-condition.js';
import type { RoutingTable } from './routing-table.js';
import type { ManagedWorker } from './workers/managed-worker.js';
import type { WorkerBook } from './workers/worker-book.js';
import { writeStatuses, writeWorkers } from './write-back.js';

export interface PassReport {
  store: Pick<Store, 'events' | 'workers' | 'leases' | 'endpoints'>;
  routes: RoutingTable;
  book: WorkerBook;
  /** What the pass did to workers, by endpoint, for their event logs (the lifecycle's, taken for this report). */
  events: [endpointId: string, event: NewEvent][];
  endpoints: Endpoint[];
  now: number;
  /** endpointStatus's answer for the endpoint, as the runtime was last seen. */
  statusOf: (endpoint: Endpoint, workers: ManagedWorker[]) => StateReport<EndpointState>;
  /** RuntimeOutage's text while the runtime cannot be reached. */
  outage: string | undefined;
  /** The leader's fence (several replicas); a deposed leader writes nothing and publishes nothing. */
  fence?: WriteFence | undefined;
  /** The owner's BUDGET_EXCEEDED sentence while its budget is spent. */
  budgetExceeded?: (ownerId: string) => string | undefined;
}

export async function reportPass(report: PassReport): Promise<void> {
  const conditions = await writeReport(report, report.endpoints);
  report.routes.publish(report.endpoints, report.book.routable(), conditions);
}

/**
 * The end of one endpoint's reconcile: the same writes (every changed worker row; its status alone), then its
 * entry in the routing table (`endpoint` undefined: deleted, it leaves the table).
 */
export async function reportEndpoint(
  report: Omit<PassReport, 'endpoints'> & { endpointId: string; endpoint: Endpoint | undefined },
): Promise<void> {
  const { endpointId, endpoint } = report;
  const conditions = await writeReport(report, endpoint ? [endpoint] : []);
  report.routes.publishEndpoint(
    endpointId,
    endpoint,
    report.book.routableOf(endpointId),
    conditions.get(endpointId),
  );
}

/** The events, the worker rows changed and the statuses of `endpoints`; their conditions. */
async function writeReport(
  report: Omit<PassReport, 'endpoints'>,
  endpoints: readonly Endpoint[],
): Promise<Map<string, EndpointCondition>> {
  const { store, book, now, outage, fence } = report;
  for (const [endpointId, event] of report.events) await store.events.append(endpointId, [event]);
  await writeWorkers(store, book.dirty, (id) => book.get(id), now, fence);
  // The statuses and events are checked on this replica's clock only (the rows above, on the database).
  fence?.claim();
  const conditions = new Map<string, EndpointCondition>();
  await writeStatuses(store, endpoints, now, (endpoint) => {
    const workers = book.ofEndpoint(endpoint.id);
    const found = report.statusOf(endpoint, workers);
    const status = outage === undefined ? found : statusDuringOutage(found, workers, outage);
    const condition = endpointCondition({
      endpoint,
      status,
      workers,
      runtimeOutage: outage,
      budgetExceeded: report.budgetExceeded?.(endpoint.ownerId),
    });
    if (condition) conditions.set(endpoint.id, condition);
    return status;
  });
  return conditions;
}
