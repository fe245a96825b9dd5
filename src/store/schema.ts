/** The database's tables as Kysely types, one shape for both engines; migrations/ creates them. */
import type { Generated } from 'kysely';

/** Table shapes as stored. Times are epoch milliseconds; JSON is stored as text for both dialects. */
export interface EndpointsTable {
  id: string;
  owner_id: string;
  app_name: string;
  spec: string;
  revision: number;
  desired: string;
  state: string;
  state_error: string;
  state_message: string;
  /** Bumped on every write; updates compare it to detect a concurrent writer. */
  version: number;
  created_at: number;
  updated_at: number;
  deleted_at: number | null;
  /** The spec's worker numbers, written with it: an owner's quota use is summed from these (migration 0009). */
  min_workers: number;
  max_workers: number;
  gpus_per_worker: number;
  /** The spec's name, written with it: `/v2/{name}` finds an endpoint by it over an index (migration 0017). */
  name: string;
  /** The spec's OpenAI model name, null when none: the model router's read, unique per owner (migration 0019). */
  openai_model: string | null;
}

export interface EndpointEventsTable {
  id: Generated<number>;
  endpoint_id: string;
  at: number;
  type: string;
  message: string;
  data: string;
}

export interface ApiKeysTable {
  id: string;
  owner_id: string;
  name: string;
  secret_hash: string;
  admin: number;
  created_at: number;
  revoked_at: number | null;
  last_used_at: number | null;
}

export interface RegistryCredentialsTable {
  id: string;
  owner_id: string;
  name: string;
  username: string;
  secret: string;
  created_at: number;
}

export interface AuditLogTable {
  id: Generated<number>;
  at: number;
  owner_id: string;
  actor: string;
  action: string;
  target_id: string;
  detail: string;
}

export interface WorkersTable {
  id: string;
  endpoint_id: string;
  owner_id: string;
  revision: number;
  state: string;
  state_error: string;
  state_message: string;
  healthy: number;
  /** JSON array of GPU uuids. */
  gpu_uuids: string;
  /** JSON {host, port} or null. */
  address: string | null;
  created_at: number;
  updated_at: number;
  ready_at: number | null;
  /** 1 once the owner drained the worker (0 after an undrain); written by the API only, read by the controller. */
  drain_requested: Generated<number>;
}

/** Live endpoints per owner (a list's total), kept with every create and delete. */
export interface EndpointCountsTable {
  owner_id: string;
  live: number;
}

/** One row: this installation's id (labels on everything Corral makes). */
export interface InstallationTable {
  id: string;
  created_at: number;
}

/** Keys that call one endpoint's URL only (`ik_...`), made by its owner; hashes only. */
export interface InvokeKeysTable {
  id: string;
  endpoint_id: string;
  owner_id: string;
  name: string;
  secret_hash: string;
  created_at: number;
  revoked_at: number | null;
}

/** Owners' secrets; `secret` is the value sealed with the server's key. */
export interface SecretsTable {
  owner_id: string;
  name: string;
  secret: string;
  created_at: number;
  updated_at: number;
}

/** The last output of a worker that ended, kept after its container is gone (a few per endpoint). */
export interface WorkerOutputsTable {
  worker_id: string;
  endpoint_id: string;
  ended_at: number;
  /** 1 when the worker ended failed (crashed, failed its checks or its start), 0 when removed (scaled down, replaced). */
  failed: number;
  /** Why it ended, as its state's message said, e.g. `worker exited with code 3`. */
  reason: string;
  /** 1 when older lines were dropped to keep within the limits. */
  truncated: number;
  /** Its last lines, each ending in a newline. */
  output: string;
}

/** A lease (the controller's: `controller`); times are the database's clock (store/cluster/leases.ts). */
export interface LeasesTable {
  name: string;
  holder: string;
  /** The fencing token: one more at every acquisition, never reused. */
  token: number;
  acquired_at: number;
  renewed_at: number;
  expires_at: number;
}

/** A running `corral serve`'s heartbeat (store/cluster/replicas.ts); times are the database's clock. */
export interface ReplicasTable {
  id: string;
  host: string;
  pid: number;
  api_url: string;
  started_at: number;
  last_seen_at: number;
  /** Its gateway's requests in flight and queued, at its last heartbeat. */
  in_flight: number;
  queued: number;
  /** The membership (a fingerprint) for which it keeps within its share of each worker's slots; null: none yet. */
  settled: string | null;
  /** Where its gateway can be reached by the other replicas (forwarding); null: an older replica's row. */
  gateway_url: string | null;
}

/** What the leader's controller last published for one endpoint (store/cluster/routes.ts). */
export interface RoutesTable {
  endpoint_id: string;
  /** Grows with every change of any row: a reader re-reads the rows whose seq moved. */
  seq: number;
  /** The endpoint as the controller saw it (JSON). */
  endpoint: string;
  /** Its routable workers (JSON: id and address each). */
  workers: string;
  /** Its condition (JSON), or null. */
  condition: string | null;
}

/** One replica's gateway queue and worker load for one endpoint (store/cluster/gateway-signals.ts). */
export interface GatewaySignalsTable {
  replica_id: string;
  endpoint_id: string;
  queue_length: number;
  /** When its oldest queued request arrived, on the database's clock; null with an empty queue. */
  oldest_enqueued_at: number | null;
  /** JSON: per worker id, requests in flight and when it was last busy (database clock). */
  workers: string;
  updated_at: number;
}

/** One replica's history sample of one endpoint in one slot (history/cluster-history.ts). */
export interface HistorySamplesTable {
  endpoint_id: string;
  /** The interval's end, ms since the epoch, a multiple of the interval. */
  slot: number;
  replica_id: string;
  /** The fencing token of the term the replica led when it sampled; null: it did not lead. */
  term: number | null;
  /** The figures (history/history-codec.ts). */
  payload: string;
}

/** One job of the jobs API (store/jobs/jobs.ts, migration 0015); JSON stays text. Times are epoch ms. */
export interface JobsTable {
  id: string;
  endpoint_id: string;
  owner_id: string;
  status: string;
  input: string;
  output: string | null;
  error: string | null;
  webhook: string | null;
  execution_timeout_ms: number;
  ttl_ms: number;
  low_priority: number;
  /** 1: submitted by runsync. */
  sync: number;
  /** How long it is kept once finished (the retention of its kind, fixed at submission). */
  retain_ms: number;
  worker_id: string | null;
  attempts: number;
  created_at: number;
  started_at: number | null;
  completed_at: number | null;
  /** created_at + ttl: TIMED_OUT past it, wherever it is. */
  expires_at: number;
  /** started_at + executionTimeout while IN_PROGRESS: TIMED_OUT past it. */
  deadline_at: number | null;
  /** completed_at + retain_ms: deleted past it. */
  retain_until: number | null;
  /** When its worker last showed it held the job (take, ping listing it, progress). */
  seen_at: number | null;
  /** 1 while its worker must be told to stop it (cancelled or timed out while held). */
  stop_pending: number;
  stopped_at: number | null;
  /** Bytes of `input` and of `output` (UTF-8), for the owner's kept bytes (migration 0016). */
  input_bytes: Generated<number>;
  output_bytes: Generated<number>;
  /** Chunks and bytes it has streamed in all, read or not: its stream's bound. */
  stream_bytes: Generated<number>;
  stream_chunks: Generated<number>;
  /** Returns from a worker that never showed it had the job, not counted as attempts (migration 0023). */
  unseen_returns: Generated<number>;
}

/** A chunk a worker streamed, until a client reads it. */
export interface JobChunksTable {
  seq: Generated<number>;
  job_id: string;
  chunk: string;
  /** The chunk's UTF-8 bytes (migration 0016). */
  bytes: Generated<number>;
}

/** When a queue worker last polled or pinged (any replica): its health. */
export interface JobWorkersTable {
  worker_id: string;
  endpoint_id: string;
  seen_at: number;
}

/** Secrets the server makes for itself and shares between replicas (the worker tokens' key). */
export interface ServerSecretsTable {
  name: string;
  value: string;
  created_at: number;
}

export interface WebhookSecretsTable {
  endpoint_id: string;
  owner_id: string;
  /** The `whsec_` secret, sealed with the server's secret key. */
  secret: string;
  created_at: number;
}

export interface WebhookDeliveriesTable {
  /** The delivery's `webhook-id`, the same on every attempt. */
  id: string;
  owner_id: string;
  endpoint_id: string;
  job_id: string;
  url: string;
  body: string;
  /** Attempts made so far. */
  attempts: number;
  /** When the next attempt is due. */
  next_at: number;
  /** A replica attempting it holds it until then; null: nobody does. */
  claimed_until: number | null;
  last_error: string | null;
  created_at: number;
}

/** One span of one worker in one usage state (migration 0018); `ended_at` null while it is open. */
export interface UsageSegmentsTable {
  id: Generated<number>;
  owner_id: string;
  endpoint_id: string;
  worker_id: string;
  gpu_product_id: string;
  gpu_count: number;
  host_memory_bytes: number;
  state: string;
  started_at: number;
  ended_at: number | null;
}

/** The closed spans' sums per UTC day (migration 0021, store/usage/usage-daily.ts). */
export interface UsageDailyTable {
  day: number;
  owner_id: string;
  endpoint_id: string;
  gpu_product_id: string;
  state: string;
  ms: number;
  gpu_ms: number;
  memory_gb_ms: number;
}

/** Each endpoint's last traffic and last idle-policy step (migration 0022). */
export interface EndpointActivityTable {
  endpoint_id: string;
  traffic_at: number | null;
  idle_step: number | null;
  idle_step_at: number | null;
}

export interface Database {
  endpoint_activity: EndpointActivityTable;
  usage_segments: UsageSegmentsTable;
  usage_daily: UsageDailyTable;
  jobs: JobsTable;
  job_chunks: JobChunksTable;
  job_workers: JobWorkersTable;
  server_secrets: ServerSecretsTable;
  webhook_secrets: WebhookSecretsTable;
  webhook_deliveries: WebhookDeliveriesTable;
  history_samples: HistorySamplesTable;
  routes: RoutesTable;
  gateway_signals: GatewaySignalsTable;
  leases: LeasesTable;
  replicas: ReplicasTable;
  installation: InstallationTable;
  workers: WorkersTable;
  endpoints: EndpointsTable;
  endpoint_counts: EndpointCountsTable;
  endpoint_events: EndpointEventsTable;
  api_keys: ApiKeysTable;
  registry_credentials: RegistryCredentialsTable;
  audit_log: AuditLogTable;
  invoke_keys: InvokeKeysTable;
  secrets: SecretsTable;
  worker_outputs: WorkerOutputsTable;
}

export type DialectName = 'sqlite' | 'postgres';
