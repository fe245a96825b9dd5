/**
 * The gateway suite's fixed settings and targets, `corral serve`'s defaults and logger as the suite wires them,
 * and the one endpoint its proxy figures route to.
 */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pino, { type Logger } from 'pino';
import { type Config, loadConfig } from '../../src/config/config.js';
import type { Endpoint } from '../../src/domain/endpoint.js';
import { createLogger } from '../../src/logger.js';
import { sampleEndpoint } from '../../test/support/fixtures.js';

export const WRK_THREADS = 2;
export const WRK_CONNECTIONS = 32;
/** Per path: 5 rounds of 2 s (10 s), the paths taking turns. */
export const WRK_ROUNDS = 5;
export const WRK_ROUND_S = 2;
export const WRK_WARMUP_S = 1;

export const LATENCY_RATE = 500;
/** Per path: 10 slices of 1 s (10 s, 5,000 requests), the paths taking turns. */
export const LATENCY_SLICES = 10;
export const LATENCY_SLICE_MS = 1_000;
export const LATENCY_WARMUP_MS = 1_000;

export const WAKE_RUNS = 5;
export const SCALE_RUNS = 5;
/** The worker's own start-to-ready: /health polled this often. */
export const BASELINE_POLL_MS = 10;
/** `queue` policy of the scale-up endpoint, in seconds. */
export const SCALE_POLICY_S = 1;
/** The request that holds the only slot while the next one queues. */
export const SCALE_HOLD_MS = 2_500;
/** The local runtime's grace period when removing workers. */
export const REMOVE_GRACE_S = 1;
/** Any single wait (a worker up, a worker removed, an answer) gives up after this long. */
export const STEP_MAX_MS = 20_000;

export const TARGET = {
  throughputRatio: 0.6,
  addedP50Ms: 0.5,
  addedP99Ms: 3,
  wakeOverheadMs: 100,
  decisionMs: 250,
} as const;

export const APP_NAME = 'bench';
/** The reference row: a bare node:http + undici proxy (see bare-proxy-child.ts). */
export const BARE_PATH = 'node:http+undici (ref)';
export const WORK_PATH = '/work?ms=0';
/**
 * The key every bench request sends (an API key of the bench endpoint's owner), as a client of a non-public
 * endpoint must; nginx, the reference proxy and the direct path get it too, so each path carries the same bytes.
 */
export const BENCH_KEY = 'sk_benchbench01_BenchKeyBenchKeyBenchKeyBenchKey';
export const BENCH_AUTHORIZATION = `Bearer ${BENCH_KEY}`;
/** Set to a directory to write a V8 CPU profile of the gateway child (node --cpu-prof) there. */
export const PROFILE_ENV = 'CORRAL_BENCH_GATEWAY_CPU_PROF';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** `corral serve`'s settings with no flag, env or file: the gateway's defaults. */
export function serveDefaults(): Config {
  return loadConfig({ flags: {}, env: {}, readFile: () => '' });
}

/** Logs as `corral serve` writes them (info level, same redaction), into /dev/null. */
export function devNullLogger(): Logger {
  return createLogger({ level: 'info', destination: pino.destination({ dest: '/dev/null', sync: false }) });
}

/** The same endpoint in the gateway child (routing stub) and in the report. */
export function benchEndpoint(): Endpoint {
  const endpoint = sampleEndpoint({
    ownerId: 'bench',
    patch: {
      appName: APP_NAME,
      workers: { minWorkers: 1, maxWorkers: 1, maxConcurrent: 64, gpusPerWorker: 0 },
    },
  });
  return { ...endpoint, status: { state: 'serving', error: '', message: '' } };
}
