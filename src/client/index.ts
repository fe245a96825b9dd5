export type {
  WireCredential,
  WireEndpoint,
  WireEndpointInput,
  WireError,
  WireEvent,
  WireLimits,
  WireProduct,
  WireState,
  WireWorker,
} from '../contract/wire.js';
export { CorralClient } from './client.js';
export { CorralApiError, CorralConnectionError, CorralError, CorralProtocolError } from './errors.js';
export type {
  CorralClientOptions,
  CreatedResult,
  EndpointLogPage,
  EndpointLogParams,
  EndpointMetrics,
  ListEndpointsParams,
  ListEndpointsResult,
  MetricsDistribution,
  SaveCredentialInput,
  WorkerLogOptions,
  WorkerMetrics,
} from './types.js';
