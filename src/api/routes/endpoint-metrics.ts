/** `GET endpoint/metrics`: an endpoint's workers (from the store) beside its traffic (this process's gateway). */
import type { FastifyInstance } from 'fastify';
import { ENDPOINT_ID_KEYS } from '../../contract/paths.js';
import { readQueryId } from '../../contract/query.js';
import type { WireEndpointMetrics } from '../../contract/wire.js';
import type { EndpointTraffic } from '../../gateway/metrics.js';
import type { AppOptions } from '../app.js';

type Query = Record<string, string | string[] | undefined>;

/** The gateway's side of an endpoint's metrics, where this process runs a gateway. */
export type TrafficSource = (endpointId: string) => EndpointTraffic;

/**
 * `GET endpoint/metrics?id=`: one endpoint's figures, as the endpoint's `metrics` URL gives them. Workers by state
 * come from the store (any API replica has them); the traffic (requests by status, latency, queue wait, queue
 * depth, in flight, cold starts) from this process's gateway since it started, with that window stated, null where
 * none runs. Another
 * owner's id answers 404, as everywhere.
 */
export function registerEndpointMetricsRoute(api: FastifyInstance, o: AppOptions): void {
  api.get('/endpoint/metrics', async (request): Promise<WireEndpointMetrics> => {
    const id = readQueryId(request.query as Query, ENDPOINT_ID_KEYS);
    const endpoint = await o.endpoints.get(request.principal, id);
    const workers: Record<string, number> = {};
    let readyWorkers = 0;
    for (const worker of await o.workers.listByEndpoint(endpoint.id)) {
      workers[worker.status.state] = (workers[worker.status.state] ?? 0) + 1;
      if (worker.status.state === 'running' && worker.healthy) readyWorkers += 1;
    }
    const traffic = o.traffic?.(endpoint.id);
    return {
      id: endpoint.id,
      workers,
      readyWorkers,
      window: traffic
        ? { since: new Date(traffic.window.since).toISOString(), seconds: traffic.window.seconds }
        : null,
      requests: traffic?.requests ?? null,
      latencyMs: traffic?.latencyMs ?? null,
      queueWaitMs: traffic?.queueWaitMs ?? null,
      queueDepth: traffic?.queueDepth ?? null,
      inFlight: traffic?.inFlight ?? null,
      coldStarts: traffic?.coldStarts ?? null,
    };
  });
}
