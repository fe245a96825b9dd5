/**
 * `loadConfig`: the one `Config` that `corral serve` runs with, from the settings (settings.ts), the config file
 * (file.ts) and defaults, parsed and its limits checked once at start.
 */
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { applyWireLimits, WIRE_LIMIT_FIELDS } from '../contract/limits.js';
import { DEFAULT_LIMITS, type Limits } from '../domain/limits.js';
import { type Quota, type QuotaSettings, UNLIMITED } from '../domain/quota.js';
import type { ConfiguredProduct } from '../gpu/products.js';
import { type ConfigFile, parseConfigFile } from './file.js';
import {
  ConfigError,
  type HostPort,
  parseServeSettings,
  type ServeSettingName,
  type ServeSettings,
} from './settings.js';

export interface NetworkStorage {
  id: string;
  clusterId: string;
  hostPath: string;
}

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
  controller: { startupTimeoutSeconds: number; reconcileIntervalMs: number };
  /** memoryGBPerGpu: a worker's memory limit per GPU (one share without GPUs); undefined: no limit. */
  workers: { memoryGBPerGpu: number | undefined };
  gateway: {
    maxQueueLength: number;
    queueTimeoutSeconds: number;
    bodyLimitBytes: number;
    /** How long an idle connection to a worker is kept; below the workers' own keep-alive timeout. */
    workerKeepAliveMs: number;
  };
}

export const DEFAULT_RATE_LIMIT: RateLimit = { requestsPerSecond: 50, burst: 100 };
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
  return {
    ...settings,
    dataDir: resolve(settings.dataDir ?? join(homedir(), '.corral')),
    apiUrl: settings.publicApiUrl ?? `http://${formatHostPort(settings.apiAddr)}`,
    configFile,
    limits: rangeLimits,
    products: file.products ?? [],
    networkStorages: (file.networkStorages ?? []).map((s) => ({
      id: s.id,
      clusterId: s.clusterID,
      hostPath: s.hostPath,
    })),
    rateLimit: file.rateLimit ?? DEFAULT_RATE_LIMIT,
    bodyLimitBytes,
    specBodyLimitBytes,
    quotas: quotaSettings(file.quotas),
    gateway: {
      maxQueueLength: file.gateway?.maxQueueLength ?? 1000,
      queueTimeoutSeconds: file.gateway?.queueTimeoutSeconds ?? 300,
      bodyLimitBytes: file.gateway?.bodyLimitBytes ?? 100 * 1024 * 1024,
      // Below the 5 s of node's and uvicorn's servers, so that the gateway closes an idle connection first.
      workerKeepAliveMs: file.gateway?.workerKeepAliveMs ?? 4000,
    },
    controller: {
      startupTimeoutSeconds: file.controller?.startupTimeoutSeconds ?? 300,
      reconcileIntervalMs: file.controller?.reconcileIntervalMs ?? 1000,
    },
    workers: { memoryGBPerGpu: file.workers?.memoryGBPerGpu },
  };
}

function quotaSettings(file: ConfigFile['quotas']): QuotaSettings {
  const values = (configured: Partial<Record<keyof Quota, number | 'unlimited'>>): Partial<Quota> =>
    Object.fromEntries(
      Object.entries(configured)
        .filter(([, value]) => value !== undefined)
        .map(([name, value]) => [name, value === 'unlimited' ? UNLIMITED : value]),
    );
  const { owners = {}, ...defaults } = file ?? {};
  return {
    defaults: values(defaults),
    owners: Object.fromEntries(Object.entries(owners).map(([owner, quota]) => [owner, values(quota)])),
  };
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
