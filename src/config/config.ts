/**
 * `loadConfig`: the one `Config` that `corral serve` runs with, from the settings (settings.ts), the config file
 * (file.ts) and defaults (the listeners' connection limits: connection-limits.ts), parsed and its limits checked once
 * at start.
 */

import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { applyWireLimits, WIRE_LIMIT_FIELDS } from '../contract/limits.js';
import type { Budget, BudgetSettings } from '../domain/budget.js';
import type { ImagePullPolicy } from '../domain/endpoint.js';
import type { IdlePolicy, IdlePolicySettings } from '../domain/idle-policy.js';
import { DEFAULT_JOB_STREAM_BOUNDS, type JobStreamBounds } from '../domain/job.js';
import { DEFAULT_LIMITS, type Limits } from '../domain/limits.js';
import { DEFAULT_HUB_URL, modelDiskBudgetBytes } from '../domain/model-refs.js';
import { type Quota, type QuotaSettings, UNLIMITED } from '../domain/quota.js';
import type { ConfiguredProduct } from '../gpu/products.js';
import { DEFAULT_STATE_FACTORS, type UsagePrices } from '../ports/usage.js';
import { type ConnectionLimits, connectionLimits } from './connection-limits.js';
import { type ConfigFile, parseConfigFile } from './file.js';
import {
  ConfigError,
  describeSetting,
  type HostPort,
  parseServeSettings,
  parseSettings,
  type ServeSettingName,
  type ServeSettings,
} from './settings.js';

export interface NetworkStorage {
  id: string;
  clusterId: string;
  hostPath: string;
  /** The owners whose endpoints may mount it, or every owner. */
  owners: readonly string[] | 'all';
  /** Mounted read-only in every worker. */
  readOnly: boolean;
  /** The kubernetes runtime: the PersistentVolumeClaim that holds it. */
  claimName?: string;
}

/** How Docker workers are confined; docs/workers.md says what each setting allows and why it is the default. */
export interface WorkerSandbox {
  /** Capabilities a worker keeps; every other one is dropped. */
  capAdd: readonly string[];
  /** Most processes and threads a worker may have; 0: no limit. */
  pidsLimit: number;
  /** json-file log rotation: at most maxFiles files of maxSizeMB each per worker. */
  log: { maxSizeMB: number; maxFiles: number };
  /**
   * owner: one bridge network per owner; endpoint: one per endpoint; none: Docker's default bridge. Workers on a
   * network of their own cannot reach each other either (inter-container traffic is off).
   */
  networkIsolation: 'owner' | 'endpoint' | 'none';
  /**
   * Where worker networks take their subnets: blocks of `prefixLength` from `pool`; undefined: Docker's default
   * address pools (about 30 networks in all).
   */
  subnets: { pool: string; prefixLength: number } | undefined;
  /** Keep workers off the host's own addresses and 169.254.0.0/16 with iptables rules (root only). */
  blockHost: boolean;
  /** Make each network storage's host path a nosuid,nodev mount (root only). */
  storageNosuid: boolean;
}

/**
 * Capabilities a worker keeps by default: what images that start as root and then drop to a user (entrypoints
 * with gosu, chown of caches and volumes, nginx-style workers) need. docs/workers.md justifies each.
 */
export const DEFAULT_CAP_ADD: readonly string[] = [
  'CHOWN',
  'DAC_OVERRIDE',
  'FOWNER',
  'SETGID',
  'SETUID',
  'KILL',
  'NET_BIND_SERVICE',
];

export const DEFAULT_SANDBOX: WorkerSandbox = {
  capAdd: DEFAULT_CAP_ADD,
  pidsLimit: 4096,
  log: { maxSizeMB: 10, maxFiles: 3 },
  networkIsolation: 'owner',
  // The last of Docker's default /16 pools, in /24 blocks: 256 networks of 253 workers each, in a range Docker
  // already takes for its own bridges (so no new clash with the LAN), and that it gives out last.
  subnets: { pool: '172.31.0.0/16', prefixLength: 24 },
  blockHost: true,
  storageNosuid: true,
};

export interface RateLimit {
  requestsPerSecond: number;
  burst: number;
}

/** Everything `corral serve` runs with, parsed and checked once at start. */
export interface Config extends Omit<ServeSettings, 'dataDir' | 'publicApiUrl' | 'config'> {
  dataDir: string;
  apiUrl: string;
  configFile: string | undefined;
  /** Limits without cudaVersionList, which comes from the GPU inventory. */
  limits: Omit<Limits, 'cudaVersions'>;
  products: ConfiguredProduct[];
  networkStorages: NetworkStorage[];
  rateLimit: RateLimit;
  bodyLimitBytes: number;
  /** The largest create or update body (at most bodyLimitBytes). */
  specBodyLimitBytes: number;
  /** Configured quotas; what is not configured comes from the GPU inventory (domain/quota.ts defaultQuota). */
  quotas: QuotaSettings;
  /** Configured budgets (docs/budgets.md): monthly per owner, and the account-wide spend per hour. */
  budgets: BudgetSettings;
  /** Configured idle policies (docs/idle-policies.md): every owner's, and by owner id instead of it. */
  idlePolicies: IdlePolicySettings;
  /** crashResetSeconds: how long a worker must run healthy to end a run of failures with flapping workers in it. */
  controller: {
    startupTimeoutSeconds: number;
    reconcileIntervalMs: number;
    crashResetSeconds: number;
    /** A worker that had served and stays unhealthy this long is replaced (docs/workers.md, health checks). */
    unhealthyTimeoutSeconds: number;
  };
  /**
   * memoryGBPerGpu: a worker's memory limit per GPU (one share without GPUs); undefined: not configured (app/build-traffic.ts
   * gives each GPU its share of the machine's memory); 0: no limit.
   */
  workers: {
    memoryGBPerGpu: number | undefined;
    /** Host memory suspended workers may take (docs/workers.md, Idle tiers); undefined: half the machine's. */
    suspendedMemoryGB?: number | undefined;
    sandbox: WorkerSandbox;
    /** The worker-facing listener (RunPod worker protocol), and its URL as workers reach it (unset: http://{listen}). */
    listen: HostPort;
    advertiseUrl: string | undefined;
  };
  /** The jobs API: retention, attempts, and the worker protocol's waits (docs/jobs-internals.md). */
  jobs: JobsSettings;
  /** The kubernetes runtime's pods: the GPU resource name and the grace period of a deletion. */
  kubernetes: {
    gpuResource: string;
    terminationGraceSeconds: number;
    cudaVersion?: string;
    /** Every worker's pull policy unless its endpoint sets one; undefined: by the image's tag (docs/kubernetes.md). */
    imagePullPolicy?: ImagePullPolicy;
    /** The node agents that freeze idle pods (docs/kubernetes.md, Idle tiers); unset: no idle tiers. */
    nodeAgent?: {
      tokenFile: string;
      port?: number | undefined;
      suspend?: boolean | undefined;
      /** The nodes' hub cache the agents fill and the pods mount (docs/models.md); undefined: the default. */
      modelCacheDir?: string | undefined;
    };
  };
  /**
   * The history behind the dashboard's charts: a sample of each endpoint every intervalSeconds, `samples` kept
   * (0: none), for at most maxEndpoints endpoints (docs/dashboard.md gives the memory).
   */
  history: { intervalSeconds: number; samples: number; maxEndpoints: number };
  /** Connection limits of both listeners, as configured (serve() fits them under the open-file limit). */
  connections: ConnectionLimits;
  /**
   * Jobs' webhooks: allowPrivate lets them go to loopback, link-local and private addresses; it takes both the
   * setting (CORRAL_WEBHOOK_ALLOW_PRIVATE) and the config file's webhooks.allowPrivate (docs/jobs.md).
   */
  webhooks: { allowPrivate: boolean };
  /** The usage ledger's prices (config file `usage:`; docs/usage.md). */
  usage: UsagePrices;
  /**
   * The model cache (docs/models.md): hubUrl is where models are fetched from (HF_ENDPOINT for the hub's clients);
   * diskBudgetBytes the bytes it may hold before it evicts models no endpoint names (null: no budget).
   */
  models: { hubUrl: string; diskBudgetBytes: number | null };
  /**
   * Registries on loopback, link-local or private addresses that images may name (registry/registry-guard.ts):
   * `--private-registries` (CORRAL_PRIVATE_REGISTRIES) and the config file's registries.allowPrivate.
   */
  registries: { allowPrivate: string[] };
  gateway: {
    maxQueueLength: number;
    queueTimeoutSeconds: number;
    bodyLimitBytes: number;
    /** How long an idle connection to a worker is kept; below the workers' own keep-alive timeout. */
    workerKeepAliveMs: number;
  };
}

export interface JobsSettings {
  /** Each owner's budget of job submissions (run, runsync, retry), weighed by body size as the API's rateLimit. */
  submissionRate: RateLimit;
  /** What bounds a job's stream: bytes and chunks in all, and the bytes one read returns. */
  stream: JobStreamBounds;
  retentionSeconds: number;
  syncRetentionSeconds: number;
  maxAttempts: number;
  lostAfterSeconds: number;
  stopGraceSeconds: number;
  takeHoldSeconds: number;
}

/** The worker-facing listener's default address: loopback, for the local runtime's workers. */
export const DEFAULT_WORKERS_LISTEN: HostPort = { host: '127.0.0.1', port: 8082 };

export const DEFAULT_RATE_LIMIT: RateLimit = { requestsPerSecond: 50, burst: 100 };
/**
 * An owner's job submissions: 100 small jobs a second with bursts of 1,000, or (a token per 16 KiB of body) about
 * 1.6 MB of inputs a second, 96 MB a minute, once the burst is spent; a 10 MB input (641 tokens) fits the burst.
 */
export const DEFAULT_JOB_SUBMISSION_RATE: RateLimit = { requestsPerSecond: 100, burst: 1000 };
export const DEFAULT_BODY_LIMIT_BYTES = 1024 * 1024;
/** A create or update body: room for 100 environment variables of 500 bytes and the rest of a spec, many times over. */
export const DEFAULT_SPEC_BODY_LIMIT_BYTES = 64 * 1024;

export interface ConfigSources {
  flags: Partial<Record<ServeSettingName, string>>;
  env: NodeJS.ProcessEnv;
  readFile: (path: string) => string;
}

export function loadConfig(sources: ConfigSources): Config {
  const settings = parseServeSettings(sources.flags, sources.env);
  const configFile = settings.config && resolve(settings.config);
  const file = configFile ? parseConfigFile(readConfigFile(sources, configFile), configFile) : {};
  const limits = applyWireLimits({ ...structuredClone(DEFAULT_LIMITS), cudaVersions: [] }, file.limits ?? {});
  checkLimits(limits);
  const { cudaVersions: _derivedFromInventory, ...rangeLimits } = limits;
  const bodyLimitBytes = file.bodyLimitBytes ?? DEFAULT_BODY_LIMIT_BYTES;
  const specBodyLimitBytes =
    file.specBodyLimitBytes ?? Math.min(DEFAULT_SPEC_BODY_LIMIT_BYTES, bodyLimitBytes);
  if (specBodyLimitBytes > bodyLimitBytes) {
    throw new ConfigError(
      `config file: specBodyLimitBytes (${specBodyLimitBytes}) is above bodyLimitBytes (${bodyLimitBytes})`,
    );
  }
  const connections = connectionLimits(file.connections);
  return {
    ...settings,
    dataDir: dataDirOf(settings.dataDir),
    apiUrl: settings.publicApiUrl ?? `http://${formatHostPort(settings.apiAddr)}`,
    configFile,
    limits: rangeLimits,
    products: file.products ?? [],
    networkStorages: (file.networkStorages ?? []).map((s) => ({
      id: s.id,
      clusterId: s.clusterID,
      hostPath: s.hostPath,
      owners: s.owners,
      readOnly: s.readOnly ?? false,
      ...(s.claimName === undefined ? {} : { claimName: s.claimName }),
    })),
    rateLimit: file.rateLimit ?? DEFAULT_RATE_LIMIT,
    bodyLimitBytes,
    specBodyLimitBytes,
    quotas: quotaSettings(file.quotas),
    budgets: budgetSettings(file.quotas),
    idlePolicies: idlePolicySettings(file.quotas),
    gateway: {
      maxQueueLength: file.gateway?.maxQueueLength ?? 1000,
      queueTimeoutSeconds: file.gateway?.queueTimeoutSeconds ?? 300,
      bodyLimitBytes: file.gateway?.bodyLimitBytes ?? 100 * 1024 * 1024,
      // Below the 5 s of node's and uvicorn's servers, so that the gateway closes an idle connection first.
      workerKeepAliveMs: file.gateway?.workerKeepAliveMs ?? 4000,
    },
    connections,
    models: {
      hubUrl: (file.models?.hubUrl ?? DEFAULT_HUB_URL).replace(/\/+$/, ''),
      diskBudgetBytes: modelDiskBudgetBytes(file.models?.diskBudgetGB),
    },
    webhooks: {
      allowPrivate: webhookAllowPrivate(settings.webhookAllowPrivate, file.webhooks?.allowPrivate),
    },
    usage: usagePrices(file.usage),
    registries: {
      allowPrivate: [
        ...new Set([...settings.privateRegistries, ...(file.registries?.allowPrivate ?? []).flat()]),
      ],
    },
    history: {
      intervalSeconds: file.history?.intervalSeconds ?? 10,
      samples: file.history?.samples ?? 360,
      maxEndpoints: file.history?.maxEndpoints ?? 500,
    },
    controller: {
      startupTimeoutSeconds: file.controller?.startupTimeoutSeconds ?? 300,
      reconcileIntervalMs: file.controller?.reconcileIntervalMs ?? 1000,
      crashResetSeconds: file.controller?.crashResetSeconds ?? 600,
      unhealthyTimeoutSeconds: file.controller?.unhealthyTimeoutSeconds ?? 60,
    },
    workers: {
      memoryGBPerGpu: file.workers?.memoryGBPerGpu,
      suspendedMemoryGB: file.workers?.suspendedMemoryGB,
      sandbox: workerSandbox(file.workers?.sandbox),
      listen: settings.workersAddr ?? file.workers?.listen ?? DEFAULT_WORKERS_LISTEN,
      advertiseUrl: settings.advertiseWorkersUrl ?? file.workers?.advertiseUrl,
    },
    jobs: {
      submissionRate: file.jobs?.submissionRate ?? DEFAULT_JOB_SUBMISSION_RATE,
      stream: { ...DEFAULT_JOB_STREAM_BOUNDS, ...file.jobs?.stream },
      retentionSeconds: file.jobs?.retentionSeconds ?? 30 * 60,
      syncRetentionSeconds: file.jobs?.syncRetentionSeconds ?? 60,
      maxAttempts: file.jobs?.maxAttempts ?? 3,
      // Three of the SDK's 10 s pings missed.
      lostAfterSeconds: file.jobs?.lostAfterSeconds ?? 35,
      stopGraceSeconds: file.jobs?.stopGraceSeconds ?? 30,
      takeHoldSeconds: file.jobs?.takeHoldSeconds ?? 60,
    },
    kubernetes: {
      gpuResource: file.kubernetes?.gpuResource ?? 'nvidia.com/gpu',
      terminationGraceSeconds: file.kubernetes?.terminationGraceSeconds ?? 10,
      ...(file.kubernetes?.cudaVersion === undefined ? {} : { cudaVersion: file.kubernetes.cudaVersion }),
      ...(file.kubernetes?.imagePullPolicy === undefined
        ? {}
        : { imagePullPolicy: file.kubernetes.imagePullPolicy }),
      ...nodeAgentSettings(settings.nodeAgentTokenFile, file.kubernetes?.nodeAgent),
    },
  };
}

/** Where the store is, as `corral serve` finds it, from only the settings that say so (for `corral keys`). */
export function loadStoreLocation(sources: Pick<ConfigSources, 'flags' | 'env'>): {
  databaseUrl: string | undefined;
  dataDir: string;
} {
  const settings = parseSettings(['dataDir', 'databaseUrl'], sources.flags, sources.env);
  return { databaseUrl: settings.databaseUrl, dataDir: dataDirOf(settings.dataDir) };
}

function dataDirOf(setting: string | undefined): string {
  return resolve(setting ?? join(homedir(), '.corral'));
}

/** Both must allow private webhook targets; one without the other is a mistake said at start, not ignored. */
function webhookAllowPrivate(setting: boolean, fileKey: boolean | undefined): boolean {
  if (setting && fileKey !== true) {
    throw new ConfigError(
      `${describeSetting('webhookAllowPrivate')} also needs webhooks.allowPrivate: true in the config file`,
    );
  }
  if (fileKey === true && !setting) {
    throw new ConfigError(
      `config file: webhooks.allowPrivate also needs ${describeSetting('webhookAllowPrivate')} set to true`,
    );
  }
  return setting && fileKey === true;
}

/**
 * The node agents' settings: `--node-agent-token-file` (CORRAL_NODE_AGENT_TOKEN_FILE), for a deployment without a
 * config file, over the file's `kubernetes.nodeAgent.tokenFile`; the file's port and suspend apply either way.
 */
function nodeAgentSettings(
  tokenFile: string | undefined,
  file: NonNullable<ConfigFile['kubernetes']>['nodeAgent'],
): { nodeAgent?: Config['kubernetes']['nodeAgent'] } {
  if (tokenFile !== undefined) return { nodeAgent: { ...file, tokenFile } };
  return file === undefined ? {} : { nodeAgent: file };
}

function workerSandbox(file: NonNullable<ConfigFile['workers']>['sandbox']): WorkerSandbox {
  const d = DEFAULT_SANDBOX;
  return {
    capAdd: file?.capAdd ?? d.capAdd,
    pidsLimit: file?.pidsLimit ?? d.pidsLimit,
    log: {
      maxSizeMB: file?.log?.maxSizeMB ?? d.log.maxSizeMB,
      maxFiles: file?.log?.maxFiles ?? d.log.maxFiles,
    },
    networkIsolation: file?.network?.isolation ?? d.networkIsolation,
    subnets: subnetSettings(file?.network, d.subnets),
    blockHost: file?.network?.blockHost ?? d.blockHost,
    storageNosuid: file?.storage?.nosuid ?? d.storageNosuid,
  };
}

function subnetSettings(
  network: NonNullable<NonNullable<ConfigFile['workers']>['sandbox']>['network'],
  defaults: WorkerSandbox['subnets'],
): WorkerSandbox['subnets'] {
  const pool = network?.subnetPool ?? defaults?.pool;
  if (pool === undefined || pool === 'docker') return undefined;
  return { pool, prefixLength: network?.subnetPrefixLength ?? defaults?.prefixLength ?? 24 };
}

function quotaSettings(file: ConfigFile['quotas']): QuotaSettings {
  const values = (configured: Partial<Record<keyof Quota, number | 'unlimited'>>): Partial<Quota> =>
    Object.fromEntries(
      Object.entries(configured)
        .filter(([, value]) => value !== undefined)
        .map(([name, value]) => [name, value === 'unlimited' ? UNLIMITED : value]),
    );
  const { owners = {}, spendPerHour: _rate, budget: _budget, idlePolicy: _idle, ...defaults } = file ?? {};
  return {
    defaults: values(defaults),
    owners: Object.fromEntries(
      Object.entries(owners).map(([owner, { budget: _own, idlePolicy: _ownIdle, ...quota }]) => [
        owner,
        values(quota),
      ]),
    ),
  };
}

/** The budgets the quotas section sets: `budget` for every owner, `owners.<id>.budget`, `spendPerHour`. */
function budgetSettings(file: ConfigFile['quotas']): BudgetSettings {
  const owners: Record<string, Budget> = {};
  for (const [owner, quota] of Object.entries(file?.owners ?? {})) {
    if (quota.budget !== undefined) owners[owner] = quota.budget;
  }
  return {
    owners,
    ...(file?.budget === undefined ? {} : { defaults: file.budget }),
    ...(file?.spendPerHour === undefined ? {} : { spendPerHour: file.spendPerHour }),
  };
}

/** The idle policies the quotas section sets: `idlePolicy` for every owner, `owners.<id>.idlePolicy`. */
function idlePolicySettings(file: ConfigFile['quotas']): IdlePolicySettings {
  const owners: Record<string, IdlePolicy | 'off'> = {};
  for (const [owner, quota] of Object.entries(file?.owners ?? {})) {
    if (quota.idlePolicy !== undefined) owners[owner] = quota.idlePolicy;
  }
  return { owners, ...(file?.idlePolicy === undefined ? {} : { defaults: file.idlePolicy }) };
}

/**
 * Where the other replicas reach this replica's gateway (its heartbeat row; they forward requests there):
 * `--advertise-gateway-url`, else `http://{gateway-addr}` with the port it listens on, a wildcard address (0.0.0.0,
 * ::) replaced by `host`, the machine's name.
 */
export function advertisedGatewayUrl(
  config: { advertiseGatewayUrl?: string | undefined; gatewayAddr: HostPort },
  port: number,
  host: string,
): string {
  if (config.advertiseGatewayUrl !== undefined) return config.advertiseGatewayUrl.replace(/\/+$/, '');
  const bound = config.gatewayAddr.host;
  const wildcard = bound === '0.0.0.0' || bound === '::' || bound === '';
  return `http://${formatHostPort({ host: wildcard ? host : bound, port })}`;
}

export function formatHostPort(address: HostPort): string {
  return address.host.includes(':') ? `[${address.host}]:${address.port}` : `${address.host}:${address.port}`;
}

function readConfigFile(sources: ConfigSources, path: string): string {
  try {
    return sources.readFile(path);
  } catch (error) {
    throw new ConfigError(
      `cannot read --config file ${path}: ${(error as NodeJS.ErrnoException).code ?? error}`,
    );
  }
}

function checkLimits(limits: Limits): void {
  for (const [name, range] of Object.entries(limits)) {
    if (Array.isArray(range)) continue;
    if (range.min > range.max) {
      throw new ConfigError(
        `config file limits: ${wireName(name, 'min')} (${range.min}) is above ${wireName(name, 'max')} (${range.max})`,
      );
    }
    if ('free' in range && (range.free < range.min || range.free > range.max)) {
      throw new ConfigError(
        `config file limits: ${wireName(name, 'free')} (${range.free}) is outside ${range.min}..${range.max}`,
      );
    }
  }
}

/** The wire name of a limit bound, as written in the config file (workers + min -> minWorkerNum). */
function wireName(domainKey: string, bound: 'min' | 'max' | 'free'): string {
  const entry = Object.entries(WIRE_LIMIT_FIELDS).find(([, [key, b]]) => key === domainKey && b === bound);
  return entry?.[0] ?? `${domainKey}.${bound}`;
}

/** The config file's `usage:` with its defaults: USD, no GPU priced, the states' default factors. */
export function usagePrices(usage: ConfigFile['usage']): UsagePrices {
  const prices = usage?.prices;
  return {
    currency: usage?.currency ?? 'USD',
    gpuPerHour: Object.fromEntries(Object.entries(prices?.gpus ?? {}).map(([id, p]) => [id, p.perHour])),
    stateFactors: { ...DEFAULT_STATE_FACTORS, ...prices?.states },
    suspendedMemoryGBHour: prices?.suspendedMemoryGBHour ?? 0,
  };
}
