/** The real API wired as `corral serve` wires it, over a test's store, with two owners' keys to call it with. */
import { randomBytes } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import pino, { type Logger } from 'pino';
import type {
  HistorySource,
  OtherReplicasSource,
  TrafficSource,
} from '../../src/api/routes/endpoint-metrics.js';
import type { ModelsReport } from '../../src/api/routes/models.js';
import { buildApi } from '../../src/app/build-api.js';
import { jobActionsOf } from '../../src/app/job-actions.js';
import { type Config, loadConfig } from '../../src/config/config.js';
import type { ServeSettingName } from '../../src/config/settings.js';
import { SecretBox } from '../../src/crypto/secret-box.js';
import { QUOTA_NAMES } from '../../src/domain/quota.js';
import { simulatedInventory } from '../../src/gpu/inventory.js';
import type { JobActions } from '../../src/ports/job-actions.js';
import type { ModelCache } from '../../src/ports/model-cache.js';
import { ApiKeyService } from '../../src/service/api-key-service.js';
import type { ImageAccessCheck } from '../../src/service/endpoint-service.js';
import type { GpuInventorySource } from '../../src/service/gpu-report.js';
import type { Store } from '../../src/store/store.js';
import { testJobService } from './job-service.js';

export interface TestApi {
  app: FastifyInstance;
  config: Config;
  /** Keys of two owners, to test tenancy. */
  keyA: string;
  keyB: string;
  /** Sends a JSON request with owner A's key unless `key` says otherwise. */
  call(
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body?: unknown,
    key?: string | null,
  ): Promise<TestResponse>;
}

export interface TestResponse {
  status: number;
  body: any;
  headers: Record<string, unknown>;
}

export const PREFIX = '/gpu-instance/openapi/v1';

/** The real API, wired exactly as `corral serve` wires it, over the given store. */
export async function createTestApi(
  store: Store,
  options: {
    flags?: Partial<Record<ServeSettingName, string>>;
    configText?: string;
    clock?: () => number;
    /** What GET endpoint/metrics reports of the gateway (none: no gateway in this process). */
    traffic?: TrafficSource;
    /** With several replicas: the other replicas' load GET endpoint/metrics adds (none: one process). */
    otherReplicas?: OtherReplicasSource;
    /** What GET endpoint/metrics/history reports (none: no history in this process). */
    history?: HistorySource;
    /** The autoscaler's desired count per endpoint (none: no controller in this process). */
    desiredWorkers?: (endpointId: string) => number | undefined;
    /** Whether an owner may run an image (none: every image is accepted, as without a Docker runtime). */
    imageAccess?: ImageAccessCheck;
    /** Workers run as host processes (the local runtime): only admin keys may create endpoints. */
    singleTenant?: boolean;
    /** Why the runtime has no idle tiers (none: it has them, as Docker and the local runtime do). */
    idleTiersOff?: string;
    /** Why queue workers could not reach the worker-facing listener (none: they can). */
    queueOff?: string;
    /** This replica, for /readyz and GET cluster (default: rep-test, leading). */
    replica?: { id: string; leading: () => boolean };
    /** The dashboard's built files (none: dist/web, as `corral serve` reads it). */
    dashboardDir?: string;
    /** Where the app logs (none: nowhere). */
    logger?: Logger;
    /** The GPUs and their holders for GET gpus (none: the simulated inventory, no worker). */
    gpuInventory?: GpuInventorySource;
    /** The model cache and who names each model, for GET models (none: an empty cache, as a new server has). */
    models?: ModelsReport;
    /** Whether the database took the last heartbeat, for /healthz (none: not said). */
    databaseTookLastBeat?: () => boolean;
    /** Cancel and retry of an owner's job (none: over a job service of the store's own, as `corral serve` has). */
    jobActions?: JobActions;
    /** Told after every endpoint change and worker drain, as the controller is in `corral serve` (none: nobody). */
    onEndpointsChanged?: (endpointId?: string) => void;
    /** The machine's model cache (none: endpoints cannot name models). */
    modelCache?: ModelCache;
  } = {},
): Promise<TestApi> {
  // Suites send bursts of requests and create many endpoints in one store; only a suite that configures a rate
  // limit gets one, and only one that configures quotas (`quotas: {}` for the defaults) gets quotas.
  const rateLimit = options.configText?.includes('rateLimit')
    ? ''
    : 'rateLimit: { requestsPerSecond: 1000000, burst: 1000000 }\n';
  const quotas = options.configText?.includes('quotas')
    ? ''
    : `quotas: { ${QUOTA_NAMES.map((q) => `${q}: unlimited`).join(', ')} }\n`;
  const configText = `${rateLimit}${quotas}${options.configText ?? ''}`;
  const config = loadConfig({
    flags: {
      gpus: 'h100-80g:2,a100-40g:2@12.4',
      dataDir: '/nonexistent',
      config: '/test/corral.yaml',
      ...options.flags,
    },
    env: {},
    readFile: () => configText,
  });
  const gpus = config.gpus.kind === 'simulated' ? simulatedInventory(config.gpus.groups) : [];
  const app = await buildApi({
    config,
    store,
    gpus,
    logger: options.logger ?? pino({ level: 'silent' }),
    secrets: new SecretBox({ key: randomBytes(32) }),
    ...(options.clock ? { clock: options.clock } : {}),
    ...(options.traffic ? { traffic: options.traffic } : {}),
    ...(options.otherReplicas ? { otherReplicas: options.otherReplicas } : {}),
    ...(options.databaseTookLastBeat ? { databaseTookLastBeat: options.databaseTookLastBeat } : {}),
    ...(options.history ? { history: options.history } : {}),
    ...(options.desiredWorkers ? { desiredWorkers: options.desiredWorkers } : {}),
    ...(options.imageAccess ? { imageAccess: options.imageAccess } : {}),
    ...(options.singleTenant ? { singleTenant: true } : {}),
    ...(options.idleTiersOff === undefined ? {} : { idleTiersOff: options.idleTiersOff }),
    ...(options.queueOff === undefined ? {} : { queueOff: options.queueOff }),
    replica: options.replica ?? { id: 'rep-test', leading: () => true },
    ...(options.dashboardDir === undefined ? {} : { dashboardDir: options.dashboardDir }),
    ...(options.gpuInventory ? { gpuInventory: options.gpuInventory } : {}),
    models: options.models ?? {
      cache: { list: async () => [], progress: () => null },
      users: async () => new Map(),
    },
    ...(options.onEndpointsChanged ? { onEndpointsChanged: options.onEndpointsChanged } : {}),
    jobActions: options.jobActions ?? jobActionsOf(testJobService(store)),
    ...(options.modelCache ? { modelCache: options.modelCache } : {}),
  });
  const keys = new ApiKeyService({ store, clock: () => Date.now() });
  const keyA = (await keys.create({ ownerId: 'owner-a', name: 'a', admin: false })).key;
  const keyB = (await keys.create({ ownerId: 'owner-b', name: 'b', admin: false })).key;
  return {
    app,
    config,
    keyA,
    keyB,
    async call(method, path, body, key = keyA) {
      const response = await app.inject({
        method,
        url: `${PREFIX}/${path}`,
        headers: {
          ...(key === null ? {} : { authorization: `Bearer ${key}` }),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { payload: typeof body === 'string' ? body : JSON.stringify(body) }),
      });
      const text = response.body;
      return {
        status: response.statusCode,
        body: text ? JSON.parse(text) : undefined,
        headers: response.headers,
      };
    },
  };
}

/** A create body as clients of the original service send it. */
export function originalClientCreateBody(overrides: Record<string, unknown> = {}) {
  return {
    endpoint: {
      name: 'sdxl',
      workerConfig: [{ minNum: 0, maxNum: 2, freeTimeout: 300, maxConcurrent: 2, gpuNum: 1 }],
      ports: [{ port: '8000' }],
      policy: [{ type: 'queue', value: 60 }],
      image: [{ image: 'registry.example.com/sdxl:1.0', authId: '', command: 'python serve.py' }],
      products: [{ id: 'h100-80g' }],
      rootfsSize: 100,
      volumeMounts: [{ type: 'local', size: 30, id: '', mountPath: '/data' }],
      clusterID: '',
      envs: [{ key: 'MODEL', value: 'sdxl' }],
      healthy: { path: '/health' },
      ...overrides,
    },
  };
}
