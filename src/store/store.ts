/** `Store`: every repository over one database connection, with its ping, migration and close. */
import { sql } from 'kysely';
import { AuditRepository } from './audit.js';
import { GatewaySignalRepository } from './cluster/gateway-signals.js';
import { HistorySampleRepository } from './cluster/history-samples.js';
import { InstallationRepository } from './cluster/installation.js';
import { LeaseRepository } from './cluster/leases.js';
import { ReplicaRepository } from './cluster/replicas.js';
import { RouteRepository } from './cluster/routes.js';
import type { DatabaseConnection } from './connection.js';
import { EndpointActivityRepository } from './endpoints/endpoint-activity.js';
import { EndpointRepository } from './endpoints/endpoints.js';
import { EventRepository } from './endpoints/events.js';
import { JobRepository } from './jobs/jobs.js';
import { ApiKeyRepository } from './keys/api-keys.js';
import { CredentialRepository } from './keys/credentials.js';
import { InvokeKeyRepository } from './keys/invoke-keys.js';
import { SecretRepository } from './keys/secrets.js';
import { ServerSecretRepository } from './keys/server-secrets.js';
import { migrateToLatest } from './migrations/index.js';
import { UsageSegmentRepository } from './usage/usage-segments.js';
import { WebhookDeliveryRepository } from './webhooks/webhook-deliveries.js';
import { WebhookSecretRepository } from './webhooks/webhook-secrets.js';
import { WorkerOutputRepository } from './workers/worker-outputs.js';
import { WorkerRepository } from './workers/workers.js';

/** Every repository over one database connection. */
export class Store {
  readonly endpoints: EndpointRepository;
  readonly events: EventRepository;
  readonly apiKeys: ApiKeyRepository;
  readonly credentials: CredentialRepository;
  readonly audit: AuditRepository;
  readonly workers: WorkerRepository;
  /** The last output of workers that ended. */
  readonly workerOutputs: WorkerOutputRepository;
  readonly installation: InstallationRepository;
  readonly invokeKeys: InvokeKeyRepository;
  readonly secrets: SecretRepository;
  /** Leader election's leases (several replicas on one database). */
  readonly leases: LeaseRepository;
  /** A heartbeat row per running replica. */
  readonly replicas: ReplicaRepository;
  /** What the leader's controller publishes for every replica's gateway. */
  readonly routes: RouteRepository;
  /** Each replica's gateway queues and worker load, for the leader's autoscaler. */
  readonly gatewaySignals: GatewaySignalRepository;
  /** Each replica's history samples, merged by whichever replica answers (several replicas). */
  readonly historySamples: HistorySampleRepository;
  /** The jobs API's queue and jobs. */
  readonly jobs: JobRepository;
  /** Keys the server makes for itself (the worker tokens'). */
  readonly serverSecrets: ServerSecretRepository;
  /** Each endpoint's webhook signing secret, sealed. */
  readonly webhookSecrets: WebhookSecretRepository;
  /** The webhooks' outbox: deliveries not yet made. */
  readonly webhookDeliveries: WebhookDeliveryRepository;
  /** The usage ledger's segments (issue 32). */
  readonly usageSegments: UsageSegmentRepository;
  /** Each endpoint's last traffic and last idle-policy step (issue 32, idle policies). */
  readonly endpointActivity: EndpointActivityRepository;
  readonly #connection: DatabaseConnection;

  constructor(options: { connection: DatabaseConnection }) {
    const { connection } = options;
    const db = connection.db;
    this.#connection = connection;
    this.endpoints = new EndpointRepository({ connection });
    this.events = new EventRepository({ db });
    this.apiKeys = new ApiKeyRepository({ db });
    this.credentials = new CredentialRepository({ db });
    this.audit = new AuditRepository({ db });
    this.workers = new WorkerRepository({ db });
    this.workerOutputs = new WorkerOutputRepository({ db });
    this.installation = new InstallationRepository({ db });
    this.invokeKeys = new InvokeKeyRepository({ db });
    this.secrets = new SecretRepository({ db });
    this.leases = new LeaseRepository({ db, dialect: connection.dialect });
    this.replicas = new ReplicaRepository({ db, dialect: connection.dialect });
    this.routes = new RouteRepository({ db, dialect: connection.dialect });
    this.gatewaySignals = new GatewaySignalRepository({ db, dialect: connection.dialect });
    this.historySamples = new HistorySampleRepository({ db });
    this.jobs = new JobRepository({
      db,
      dialect: connection.dialect,
      reclaimFreePages: connection.reclaimFreePages?.bind(connection),
    });
    this.serverSecrets = new ServerSecretRepository({ db });
    this.webhookSecrets = new WebhookSecretRepository({ db });
    this.webhookDeliveries = new WebhookDeliveryRepository({ db });
    this.usageSegments = new UsageSegmentRepository({ db, dialect: connection.dialect });
    this.endpointActivity = new EndpointActivityRepository({ db });
  }

  get dialect() {
    return this.#connection.dialect;
  }

  describe(): string {
    return this.#connection.describe();
  }

  /**
   * A change feed on this database: a dedicated connection that LISTENs (PostgreSQL); undefined on SQLite, which
   * serves one process.
   */
  get listener(): DatabaseConnection['listener'] {
    return this.#connection.listener;
  }

  /** Sends `payload` on `channel` to every listener (PostgreSQL); nothing on SQLite. */
  async notify(channel: string, payload = ''): Promise<void> {
    if (this.dialect === 'postgres')
      await sql`select pg_notify(${channel}, ${payload})`.execute(this.#connection.db);
  }

  /** One trivial query; it fails when the database cannot be reached or opened. */
  async ping(): Promise<void> {
    await sql`select 1`.execute(this.#connection.db);
  }

  /** Applies pending migrations; returns the names of those applied now. */
  migrate(): Promise<string[]> {
    return migrateToLatest(this.#connection.db, this.#connection.dialect, this.#connection.schema);
  }

  close(): Promise<void> {
    return this.#connection.close();
  }
}
