/**
 * The config file (YAML or JSON) and its strict schema: limits, products, network storages, and the rate-limit,
 * gateway, controller and worker tuning that has no flag.
 */
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { WIRE_LIMIT_FIELDS } from '../contract/limits.js';
import { IMAGE_PULL_POLICIES } from '../domain/endpoint.js';
import { USAGE_STATES } from '../ports/usage.js';
import { ConfigError, hostPortSchema, registryAllowList, urlSchema } from './settings.js';

const count = z.int().min(0);

const limits = z.strictObject(
  Object.fromEntries(Object.keys(WIRE_LIMIT_FIELDS).map((key) => [key, count.optional()])) as Record<
    keyof typeof WIRE_LIMIT_FIELDS,
    z.ZodOptional<typeof count>
  >,
);

/** A Linux capability name as Docker takes it, without the CAP_ prefix. */
const capability = z.string().regex(/^[A-Z][A-Z_]*$/, 'expected a capability name such as NET_BIND_SERVICE');

const SUBNET_POOL_ERROR =
  'expected an IPv4 CIDR such as 172.31.0.0/16, or "docker" for Docker\'s default address pools';

/** How Docker workers are confined (docs/workers.md); every key has a default. */
const sandboxSchema = z.strictObject({
  capAdd: z.array(capability).optional(),
  pidsLimit: z.int().min(0).optional(),
  log: z
    .strictObject({ maxSizeMB: z.int().min(1).optional(), maxFiles: z.int().min(1).max(100).optional() })
    .optional(),
  network: z
    .strictObject({
      isolation: z.enum(['owner', 'endpoint', 'none']).optional(),
      blockHost: z.boolean().optional(),
      subnetPool: z.union([z.literal('docker'), z.cidrv4({ error: SUBNET_POOL_ERROR })]).optional(),
      subnetPrefixLength: z.int().min(16).max(29).optional(),
    })
    .optional(),
  storage: z.strictObject({ nosuid: z.boolean().optional() }).optional(),
});

/** A quota: a count, or "unlimited". */
const QUOTA_ERROR = 'expected an integer >= 0 or "unlimited"';
const quotaLimit = z.union(
  [z.int({ error: QUOTA_ERROR }).min(0, { error: QUOTA_ERROR }), z.literal('unlimited')],
  {
    error: QUOTA_ERROR,
  },
);
/** An idle policy (docs/idle-policies.md): steps in ascending afterDays, their maxWorkers descending; or off. */
const idleStep = z.strictObject({
  afterDays: z.number().positive(),
  maxWorkers: z.int().min(0),
});
const idlePolicy = z.union(
  [
    z.literal('off'),
    z.strictObject({
      steps: z
        .array(idleStep)
        .min(1)
        .refine((steps) => steps.every((s, i) => i === 0 || s.afterDays > (steps[i - 1]?.afterDays ?? 0)), {
          error: 'expected steps in ascending afterDays',
        })
        .refine((steps) => steps.every((s, i) => i === 0 || s.maxWorkers < (steps[i - 1]?.maxWorkers ?? 0)), {
          error: 'expected each step to lower maxWorkers below the step before it',
        }),
    }),
  ],
  { error: 'expected off or { steps: [{ afterDays, maxWorkers }, ...] }' },
);

const quotaValues = z.strictObject({
  endpoints: quotaLimit.optional(),
  minGpus: quotaLimit.optional(),
  maxGpus: quotaLimit.optional(),
  workers: quotaLimit.optional(),
  credentials: quotaLimit.optional(),
  secrets: quotaLimit.optional(),
  invokeKeys: quotaLimit.optional(),
  queuedJobs: quotaLimit.optional(),
  jobBytes: quotaLimit.optional(),
  /** A monthly budget (docs/budgets.md): money in the ledger's currency, or GPU-hours; fractions allowed. */
  budget: z
    .strictObject({
      perMonth: z.number().min(0).optional(),
      gpuHoursPerMonth: z.number().min(0).optional(),
    })
    .optional(),
  /** Lowers maxWorkers of endpoints without traffic (docs/idle-policies.md); `off`: none for this owner. */
  idlePolicy: idlePolicy.optional(),
});

/** One listener's connection limits (docs/security.md, Connection limits); every key has a default. */
const listenerSchema = z.strictObject({
  maxConnections: z.int().min(1).optional(),
  maxConnectionsPerClient: z.int().min(1).optional(),
  headersTimeoutMs: z.int().min(100).max(600_000).optional(),
  keepAliveTimeoutMs: z.int().min(100).max(3_600_000).optional(),
  /** Requests one connection may carry; 0: no limit. */
  maxRequestsPerSocket: z.int().min(0).optional(),
});

const fileSchema = z.strictObject({
  limits: limits.optional(),
  products: z
    .array(
      z.strictObject({
        id: z.string().regex(/^[a-z0-9][a-z0-9-]*$/, 'expected a lowercase id such as h100-80g'),
        name: z.string().optional(),
        gpuModel: z.string().optional(),
        gpuMemoryGB: count.optional(),
        /** The kubernetes runtime: `label=value` of its nodes, or a value of nvidia.com/gpu.product. */
        nodeLabel: z.string().min(1).optional(),
      }),
    )
    .optional(),
  networkStorages: z
    .array(
      z.strictObject({
        id: z.string().min(1),
        clusterID: z.string().min(1),
        hostPath: z.string().startsWith('/'),
        /** Who may mount it: owner ids, or `all`. Required, so that sharing is always a decision. */
        owners: z.union([z.literal('all'), z.array(z.string().min(1)).min(1)], {
          error: 'name the owners who may mount it: a list of owner ids, or all',
        }),
        readOnly: z.boolean().optional(),
        /** The kubernetes runtime: the PersistentVolumeClaim (in the workers' namespace) that holds it. */
        claimName: z.string().min(1).optional(),
      }),
    )
    .optional(),
  rateLimit: z
    .strictObject({ requestsPerSecond: z.number().positive(), burst: z.int().positive() })
    .optional(),
  bodyLimitBytes: z.int().min(1024).optional(),
  /** The largest create or update body, in bytes; not above bodyLimitBytes. */
  specBodyLimitBytes: z.int().min(1024).optional(),
  /** Per-owner quotas: the values for every owner, and `owners` by owner id over them. */
  quotas: quotaValues
    .extend({
      owners: z.record(z.string().min(1), quotaValues).optional(),
      /** The most every owner together may spend in one clock hour, in the ledger's currency (docs/budgets.md). */
      spendPerHour: z.number().min(0).optional(),
    })
    .strict()
    .optional(),
  gateway: z
    .strictObject({
      maxQueueLength: z.int().min(0).optional(),
      queueTimeoutSeconds: z.int().positive().optional(),
      bodyLimitBytes: z.int().min(1024).optional(),
      workerKeepAliveMs: z.int().min(1).max(600_000).optional(),
    })
    .optional(),
  /** Connection limits of the API's and the gateway's listeners, and the files kept free besides them. */
  connections: z
    .strictObject({
      reservedFiles: z.int().min(64).optional(),
      api: listenerSchema.optional(),
      gateway: listenerSchema.optional(),
    })
    .optional(),
  controller: z
    .strictObject({
      startupTimeoutSeconds: z.int().positive().optional(),
      reconcileIntervalMs: z.int().min(50).optional(),
      crashResetSeconds: z.int().positive().optional(),
      unhealthyTimeoutSeconds: z.int().positive().optional(),
    })
    .optional(),
  /** The dashboard's history of each endpoint (docs/dashboard.md): its interval, length and endpoints kept. */
  history: z
    .strictObject({
      intervalSeconds: z.int().min(1).max(3600).optional(),
      /** Samples kept per endpoint; 0 keeps no history. */
      samples: z.int().min(0).max(8640).optional(),
      maxEndpoints: z.int().min(1).max(100_000).optional(),
    })
    .optional(),
  kubernetes: z
    .strictObject({
      /** The extended resource GPUs are requested as; default nvidia.com/gpu (a MIG profile, say). */
      gpuResource: z.string().min(1).optional(),
      /** Seconds between SIGTERM and SIGKILL when a worker's pod is deleted; default 10. */
      terminationGraceSeconds: z.int().min(0).optional(),
      /** Every worker's image pull policy unless its endpoint sets one; unset: Always for :latest, else IfNotPresent. */
      imagePullPolicy: z.enum(IMAGE_PULL_POLICIES).optional(),
      /** The highest CUDA version every GPU node's driver supports (`12.4`); unset: the nodes' labels say. */
      cudaVersion: z
        .string()
        .regex(/^\d+\.\d+$/)
        .optional(),
      /** The node agents (`corral node`, the corral-node DaemonSet) that freeze idle pods: the idle tiers. */
      nodeAgent: z
        .strictObject({
          /** The file holding the token the agents were given (the mounted Secret). */
          tokenFile: z.string().min(1),
          /** The port every node's agent listens on at the node's IP; default 9479. */
          port: z.int().min(1).max(65_535).optional(),
          /** Suspend frozen pods' GPU state through the agents (they keep their nvidia.com/gpu); default false. */
          suspend: z.boolean().optional(),
          /** The nodes' model cache, which the agents fill (their --model-cache-dir); default /var/lib/corral/models/hub. */
          modelCacheDir: z.string().startsWith('/').optional(),
        })
        .optional(),
    })
    .optional(),
  /** The model cache (docs/models.md): the hub it fetches from, and the disk it may fill before it evicts. */
  models: z
    .strictObject({ hubUrl: urlSchema.optional(), diskBudgetGB: z.number().positive().optional() })
    .optional(),
  /** The usage ledger's prices (docs/usage.md): none set, amounts are 0 and the seconds are still counted. */
  usage: z
    .strictObject({
      /** The currency amounts are in (ISO 4217, e.g. USD); default USD. */
      currency: z
        .string()
        .regex(/^[A-Z]{3}$/, 'expected an ISO 4217 code such as USD')
        .optional(),
      prices: z
        .strictObject({
          /** Per GPU product id (GET products): the price of one GPU for an hour. */
          gpus: z.record(z.string().min(1), z.strictObject({ perHour: z.number().min(0) })).optional(),
          /** Per state, a factor of the GPU price: defaults 1, suspended and downloading 0. */
          states: z.partialRecord(z.enum(USAGE_STATES), z.number().min(0)).optional(),
          /** A suspended worker's host memory, per GB and hour. */
          suspendedMemoryGBHour: z.number().min(0).optional(),
        })
        .optional(),
    })
    .optional(),
  /** Jobs' webhooks: allowPrivate with --webhook-allow-private (CORRAL_WEBHOOK_ALLOW_PRIVATE) allows private targets. */
  webhooks: z.strictObject({ allowPrivate: z.boolean().optional() }).optional(),
  /** Registries on private addresses that images may name, with --private-registries's (docs/security.md). */
  registries: z.strictObject({ allowPrivate: z.array(registryAllowList).optional() }).optional(),
  workers: z
    .strictObject({
      /** Host memory a worker may use per GPU it has, in GiB; unset: its GPUs' share of the machine; 0: none. */
      memoryGBPerGpu: z.number().min(0).optional(),
      /** Host memory suspended workers' GPU state may take, in GB; unset: half the machine's memory. */
      suspendedMemoryGB: z.number().min(0).optional(),
      sandbox: sandboxSchema.optional(),
      /** The worker-facing listener (the RunPod worker protocol of queue endpoints), host:port. */
      listen: hostPortSchema.optional(),
      /** The listener's URL as workers reach it; unset: http://{listen}. */
      advertiseUrl: urlSchema.optional(),
    })
    .optional(),
  /** The jobs API (docs/jobs-internals.md). */
  jobs: z
    .strictObject({
      /** Each owner's budget of job submissions, weighed by body size as `rateLimit` (docs/jobs.md). */
      submissionRate: z
        .strictObject({ requestsPerSecond: z.number().positive(), burst: z.int().positive() })
        .optional(),
      /** What bounds a job's stream: bytes and chunks in all (read or not), and the bytes one read returns. */
      stream: z
        .strictObject({
          maxBytes: z
            .int()
            .min(1024 * 1024)
            .optional(),
          maxChunks: z.int().min(1).optional(),
          readBytes: z.int().min(1024).optional(),
        })
        .optional(),
      /** How long a finished job is kept after `run`, and after `runsync`. */
      retentionSeconds: z
        .int()
        .min(1)
        .max(30 * 24 * 3600)
        .optional(),
      syncRetentionSeconds: z
        .int()
        .min(1)
        .max(30 * 24 * 3600)
        .optional(),
      /** How many times a job is taken before the loss of its worker FAILS it. */
      maxAttempts: z.int().min(1).max(100).optional(),
      /** A job no worker showed it held (take, ping, progress) for this long goes back to the queue. */
      lostAfterSeconds: z.int().min(1).max(3600).optional(),
      /** A worker still holding a job it was told to stop this long after is replaced. */
      stopGraceSeconds: z.int().min(1).max(3600).optional(),
      /** How long a take is held open before 204 (under the SDK's 90 s timeout). */
      takeHoldSeconds: z.int().min(1).max(80).optional(),
    })
    .optional(),
});

export type ConfigFile = z.output<typeof fileSchema>;

/** Parses the config file's text (YAML, of which JSON is a subset). */
export function parseConfigFile(text: string, path: string): ConfigFile {
  let data: unknown;
  try {
    data = parseYaml(text) ?? {};
  } catch (error) {
    throw new ConfigError(
      `config file ${path}: not valid YAML or JSON: ${(error as Error).message.split('\n')[0]}`,
    );
  }
  const parsed = fileSchema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue?.path.join('.') || '(top level)';
    throw new ConfigError(`config file ${path}: ${where}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}
