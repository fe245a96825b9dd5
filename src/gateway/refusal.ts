/**
 * The gateway's answer to a request its endpoint cannot serve now, from the refusal the controller published
 * (routing-table.ts): a 503 whose message names the endpoint's reason and its last worker's message, both also in
 * the metadata for programs.
 */

import type { Endpoint } from '../domain/endpoint.js';
import { GatewayError, type GatewayErrorCode } from '../errors/gateway-catalogue.js';
import type { EndpointRefusal } from '../ports/routing-view.js';

const CODE: Record<EndpointRefusal['kind'], GatewayErrorCode> = {
  failed: 'ENDPOINT_FAILED',
  'no-capacity': 'NO_CAPACITY',
  'no-workers': 'NO_WORKERS',
  'runtime-unavailable': 'RUNTIME_UNAVAILABLE',
  'budget-exceeded': 'BUDGET_EXCEEDED',
};

export function refusalError(endpoint: Endpoint, refusal: EndpointRefusal): GatewayError {
  const name = endpoint.spec.appName;
  const what =
    refusal.kind === 'failed'
      ? `endpoint ${name} is failed (${refusal.reason}): ${refusal.message}`
      : refusal.kind === 'runtime-unavailable' || refusal.kind === 'budget-exceeded'
        ? `endpoint ${name} has no worker that can serve and none can start: ${refusal.message}`
        : `endpoint ${name} cannot get a worker: ${refusal.message}`;
  const last = refusal.lastWorkerMessage;
  const message = last !== '' && !what.includes(last) ? `${what} (last worker: ${last})` : what;
  return new GatewayError(CODE[refusal.kind], message, {
    metadata: {
      endpointId: endpoint.id,
      endpointError: refusal.reason,
      endpointMessage: refusal.message,
      lastWorkerMessage: last,
    },
  });
}
