/**
 * The table of `corral serve` settings (flag, environment variable, default and schema of each), their parsing
 * with flags over environment over defaults, and `ConfigError`, the one-line failure of a bad setting.
 */
import { z } from 'zod';
import { type GpuSource, parseGpuSource } from '../gpu/inventory.js';
import type { LocalImageAllowance } from '../registry/image-access.js';
import { parseImageReference } from '../registry/image-reference.js';
import { allowEntryProblem } from '../registry/registry-guard.js';

export interface HostPort {
  host: string;
  port: number;
}

const hostPort = z.string().transform((value, ctx): HostPort => {
  const match = /^(\[[^\]]+\]|[^:]+):(\d{1,5})$/.exec(value.trim());
  const port = Number(match?.[2]);
  if (!match?.[1] || port > 65535) {
    ctx.addIssue({ code: 'custom', message: `expected host:port such as 127.0.0.1:8080, got "${value}"` });
    return z.NEVER;
  }
  return { host: match[1].replace(/^\[|\]$/g, ''), port };
});

const gpuSource = z.string().transform((value, ctx): GpuSource => {
  try {
    return parseGpuSource(value);
  } catch (error) {
    ctx.addIssue({ code: 'custom', message: (error as Error).message });
    return z.NEVER;
  }
});

const domain = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z0-9]([a-z0-9.-]*[a-z0-9])?$/, 'expected a DNS name such as localhost or corral.example.com');

const url = z
  .string()
  .trim()
  .regex(/^https?:\/\/[^\s/]+(\/.*)?$/, 'expected an http:// or https:// URL')
  .transform((value) => value.replace(/\/+$/, ''));

/** `host:port` and an http(s) URL as the config file takes them too. */
export { hostPort as hostPortSchema, url as urlSchema };

/** `admins`, `all`, or a comma-separated list of image names (a name without a tag allows every tag). */
const localImageAllowance = z.string().transform((value, ctx): LocalImageAllowance => {
  const trimmed = value.trim();
  if (trimmed === 'admins' || trimmed === 'all') return trimmed;
  const names = trimmed.split(',').map((name) => name.trim());
  const bad = names.find((name) => parseImageReference(name) === undefined);
  if (bad !== undefined) {
    ctx.addIssue({
      code: 'custom',
      message: `expected admins, all or image names such as app,team/app:1, got "${bad}"`,
    });
    return z.NEVER;
  }
  return names;
});

/** Registries on private addresses the operator lists: `host` or `host:port`, comma-separated, as image names write them. */
export const registryAllowList = z.string().transform((value, ctx): string[] => {
  const entries = value
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  for (const entry of entries) {
    const problem = allowEntryProblem(entry);
    if (problem !== undefined) {
      ctx.addIssue({
        code: 'custom',
        message: `expected registries such as 127.0.0.1:5000,registry.internal: ${problem}`,
      });
      return z.NEVER;
    }
  }
  return entries;
});

const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === '' ? undefined : v));

/**
 * Every `corral serve` setting: its flag, its environment variable, its default and its schema.
 * The CLI registers its options from this table and the config is parsed from it once.
 */
export const SERVE_SETTINGS = {
  apiAddr: {
    flag: '--api-addr',
    env: 'CORRAL_API_ADDR',
    default: '127.0.0.1:8080',
    help: 'address of the API (host:port)',
    schema: hostPort,
  },
  gatewayAddr: {
    flag: '--gateway-addr',
    env: 'CORRAL_GATEWAY_ADDR',
    default: '127.0.0.1:8000',
    help: "address of the gateway that serves endpoints' URLs (host:port)",
    schema: hostPort,
  },
  dataDir: {
    flag: '--data-dir',
    env: 'CORRAL_DATA_DIR',
    default: undefined,
    help: 'directory for the SQLite database and the secret key (default ~/.corral)',
    schema: optionalText,
  },
  databaseUrl: {
    flag: '--database-url',
    env: 'CORRAL_DATABASE_URL',
    default: undefined,
    help: 'postgres://user:pass@host/db for PostgreSQL, or sqlite:PATH; default SQLite in the data directory',
    schema: optionalText.refine((v) => v === undefined || /^(postgres(ql)?:\/\/|sqlite:)/.test(v), {
      message: 'expected postgres://…, postgresql://… or sqlite:PATH',
    }),
  },
  runtime: {
    flag: '--runtime',
    env: 'CORRAL_RUNTIME',
    default: 'auto',
    help:
      'worker runtime: auto, docker, kubernetes, local or fake (auto: docker; waits for an engine that does not ' +
      'answer yet; local only where no engine is installed)',
    schema: z.enum(['auto', 'docker', 'kubernetes', 'local', 'fake'], {
      error: 'expected auto, docker, kubernetes, local or fake',
    }),
  },
  kubeconfig: {
    flag: '--kubeconfig',
    env: 'CORRAL_KUBECONFIG',
    default: undefined,
    help:
      'the kubernetes runtime: kubeconfig file of the cluster (default: the in-cluster service account, then ' +
      '~/.kube/config)',
    schema: optionalText,
  },
  namespace: {
    flag: '--namespace',
    env: 'CORRAL_NAMESPACE',
    default: 'corral-workers',
    help: "the kubernetes runtime: the namespace of workers' pods and pull Secrets",
    schema: z
      .string()
      .regex(/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/, 'expected a namespace name (lowercase, digits, -)'),
  },
  nodeAgentTokenFile: {
    flag: '--node-agent-token-file',
    env: 'CORRAL_NODE_AGENT_TOKEN_FILE',
    default: undefined,
    help:
      "the kubernetes runtime: the node agents' token file (the mounted corral-node-token Secret); turns on idle " +
      "tiers through them, as the config file's kubernetes.nodeAgent.tokenFile, whose other keys still apply",
    schema: optionalText,
  },
  localAllowRoot: {
    flag: '--local-allow-root',
    env: 'CORRAL_LOCAL_ALLOW_ROOT',
    default: 'false',
    help: 'let the local runtime run workers as root: they are host processes, so they run as root on this host',
    /** A flag without a value; the environment variable takes 1/true or 0/false. */
    switch: true,
    schema: z
      .enum(['1', 'true', '0', 'false', ''], { error: 'expected 1, true, 0 or false' })
      .transform((v) => v === '1' || v === 'true'),
  },
  webhookAllowPrivate: {
    flag: '--webhook-allow-private',
    env: 'CORRAL_WEBHOOK_ALLOW_PRIVATE',
    default: 'false',
    help: "let jobs' webhooks go to loopback, link-local and private addresses; webhooks.allowPrivate in the config file must say so too",
    /** A flag without a value; the environment variable takes 1/true or 0/false. */
    switch: true,
    schema: z
      .enum(['1', 'true', '0', 'false', ''], { error: 'expected 1, true, 0 or false' })
      .transform((v) => v === '1' || v === 'true'),
  },
  gpus: {
    flag: '--gpus',
    env: 'CORRAL_GPUS',
    default: 'auto',
    help: 'auto (nvidia-smi), or a simulated inventory such as 8 or h100-80g:8',
    schema: gpuSource,
  },
  domain: {
    flag: '--domain',
    env: 'CORRAL_DOMAIN',
    default: 'localhost',
    help: 'endpoints are served at http://{appName}.{domain}:{gateway port}',
    schema: domain,
  },
  publicUrl: {
    flag: '--public-url',
    env: 'CORRAL_PUBLIC_URL',
    default: undefined,
    help: "public base of endpoints' URLs, e.g. https://run.example.com gives https://{appName}.run.example.com",
    schema: url.optional(),
  },
  publicApiUrl: {
    flag: '--public-api-url',
    env: 'CORRAL_PUBLIC_API_URL',
    default: undefined,
    help: 'public base URL of the API, used in log and metrics links (default http://{api-addr})',
    schema: url.optional(),
  },
  advertiseGatewayUrl: {
    flag: '--advertise-gateway-url',
    env: 'CORRAL_ADVERTISE_GATEWAY_URL',
    default: undefined,
    help: "where the other replicas reach this one's gateway to forward requests (default http://{gateway-addr})",
    schema: url.optional(),
  },
  workersAddr: {
    flag: '--workers-addr',
    env: 'CORRAL_WORKERS_ADDR',
    default: undefined,
    help: "address of the worker-facing listener, where queue endpoints' workers take jobs (default: the config file's workers.listen, else 127.0.0.1:8082)",
    schema: hostPort.optional(),
  },
  advertiseWorkersUrl: {
    flag: '--advertise-workers-url',
    env: 'CORRAL_ADVERTISE_WORKERS_URL',
    default: undefined,
    help: "where queue workers reach the worker-facing listener, in their RUNPOD_WEBHOOK_* URLs (default: the config file's workers.advertiseUrl, else by runtime; kubernetes: the corral-workers Service)",
    schema: url.optional(),
  },
  config: {
    flag: '--config',
    env: 'CORRAL_CONFIG',
    default: undefined,
    help: 'YAML or JSON file with limits, products, network storages and rate limits',
    schema: optionalText,
  },
  allowLocalImages: {
    flag: '--allow-local-images',
    env: 'CORRAL_ALLOW_LOCAL_IMAGES',
    default: 'admins',
    help: 'who may run images that exist only on this machine (built here, never pulled): admins, all, or image names',
    schema: localImageAllowance,
  },
  privateRegistries: {
    flag: '--private-registries',
    env: 'CORRAL_PRIVATE_REGISTRIES',
    default: '',
    help:
      'registries on loopback, link-local or private addresses that images may name (host or host:port, ' +
      "comma-separated; with the config file's registries.allowPrivate); others are refused",
    schema: registryAllowList,
  },
  metricsToken: {
    flag: '--metrics-token',
    env: 'CORRAL_METRICS_TOKEN',
    default: undefined,
    help: 'a bearer token (16+ characters) that may read /metrics, for Prometheus; admin keys may too',
    schema: optionalText.refine((v) => v === undefined || v.trim().length >= 16, {
      message: 'use at least 16 random characters',
    }),
  },
  logLevel: {
    flag: '--log-level',
    env: 'CORRAL_LOG_LEVEL',
    default: 'info',
    help: 'fatal, error, warn, info, debug or trace',
    schema: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace'], {
      error: 'expected fatal, error, warn, info, debug or trace',
    }),
  },
  logFormat: {
    flag: '--log-format',
    env: 'CORRAL_LOG_FORMAT',
    default: undefined,
    help: 'json (one JSON object a line) or pretty (readable lines); default pretty on a terminal, else json',
    schema: z.enum(['json', 'pretty'], { error: 'expected json or pretty' }).optional(),
  },
} as const;

export type ServeSettingName = keyof typeof SERVE_SETTINGS;
export type ServeSettings = { [K in ServeSettingName]: z.output<(typeof SERVE_SETTINGS)[K]['schema']> };

/** Thrown for bad configuration; its message is the one line printed before exiting. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** How messages name a setting: its flag and its environment variable, e.g. `--api-addr (CORRAL_API_ADDR)`. */
export function describeSetting(name: ServeSettingName): string {
  const setting = SERVE_SETTINGS[name];
  return `${setting.flag} (${setting.env})`;
}

/** Flags win over environment variables, which win over defaults. */
export function parseServeSettings(
  flags: Partial<Record<ServeSettingName, string>>,
  env: NodeJS.ProcessEnv,
): ServeSettings {
  return parseSettings(Object.keys(SERVE_SETTINGS) as ServeSettingName[], flags, env) as ServeSettings;
}

/**
 * Only the named settings, flags over environment over defaults: a command that is not `serve` reads what it uses
 * and ignores the rest, so that a serve-only switch exported in the shell (CORRAL_WEBHOOK_ALLOW_PRIVATE without its
 * config file) does not stop `corral keys`.
 */
export function parseSettings<K extends ServeSettingName>(
  names: readonly K[],
  flags: Partial<Record<ServeSettingName, string>>,
  env: NodeJS.ProcessEnv,
): Pick<ServeSettings, K> {
  const result: Record<string, unknown> = {};
  for (const name of names) {
    const setting = SERVE_SETTINGS[name];
    const raw = flags[name] ?? env[setting.env] ?? setting.default;
    const parsed = (setting.schema as z.ZodType).safeParse(raw);
    if (!parsed.success) {
      const reason = parsed.error.issues[0]?.message ?? 'invalid value';
      throw new ConfigError(`invalid ${describeSetting(name)}: ${reason}`);
    }
    result[name] = parsed.data;
  }
  return result as Pick<ServeSettings, K>;
}
