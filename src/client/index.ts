/** The client's public surface: `CorralClient`, its error classes, its own types and the wire types it returns. */
export type { WireApiKey, WireNewApiKey } from '../contract/api-keys.js';
export type { WireBillingParams, WireBillingRow, WireGrouping } from '../contract/billing.js';
export {
  addBillingSums,
  type BillingSums,
  billingSums,
  usageCsv,
} from '../contract/billing-export.js';
export type { WireCluster } from '../contract/cluster.js';
export type { WireGpu, WireGpuHolder, WireGpus, WireWaitingWorker } from '../contract/gpus.js';
export type {
  WireClippedText,
  WireEndpointJobs,
  WireJobDetail,
  WireJobListing,
} from '../contract/job-views.js';
export type { WireCachedModel, WireModelPull, WireModels, WireModelUser } from '../contract/models.js';
export type { WireQuotaReport } from '../contract/quota.js';
export type { WireWebhookSecret } from '../contract/webhook-secrets.js';
export type {
  WireCredential,
  WireDistribution,
  WireEndedWorker,
  WireEndpoint,
  WireEndpointHistory,
  WireEndpointInput,
  WireEndpointMetrics,
  WireEndpointMetricsJobs,
  WireError,
  WireEvent,
  WireInvokeKey,
  WireJobsHistory,
  WireJobUrls,
  WireLimits,
  WireNewInvokeKey,
  WireProduct,
  WireRecentJobs,
  WireRecentTraffic,
  WireSecret,
  WireState,
  WireUsageTotals,
  WireWakeColumns,
  WireWakes,
  WireWorker,
} from '../contract/wire.js';
export { CorralClient } from './client.js';
export {
  CorralApiError,
  CorralClientError,
  CorralConnectionError,
  CorralProtocolError,
} from './errors.js';
export {
  FOLLOW_POLL_MS,
  type FollowEnd,
  type FollowEndpointOptions,
  followEndpointLogs,
} from './follow.js';
export { calledByJobs, EXAMPLE_JOB_BODY, runsyncCurl } from './job-request.js';
export {
  JOB_STATUSES,
  type JobListParams,
  type JobStatusName,
  type RunJobInput,
  TERMINAL_JOB_STATUSES,
  type WireJob,
  type WireJobList,
  type WireJobStream,
  type WirePurge,
} from './job-types.js';
export { CorralJobsClient, type CorralJobsClientOptions } from './jobs.js';
export type {
  CorralClientOptions,
  CreatedResult,
  EndpointLogPage,
  EndpointLogParams,
  ListEndpointsParams,
  ListEndpointsResult,
  SaveCredentialInput,
  SavedSecret,
  WorkerLogOptions,
  WorkerMetrics,
} from './types.js';
