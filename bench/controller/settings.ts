/**
 * The controller suite's fixed counts, limits and target, its sleep, and `corral serve`'s logger as the suite
 * wires it.
 */
import pino, { type Logger } from 'pino';
import { createLogger } from '../../src/logger.js';

export const ENDPOINTS = 1_000;
export const WORKERS_PER_ENDPOINT = 10;
export const TOTAL_WORKERS = ENDPOINTS * WORKERS_PER_ENDPOINT;
/** Give up converging (all workers running and healthy) after this long. */
export const CONVERGE_MAX_MS = 60_000;
/**
 * The same on the kubernetes runtime (part 3): each of its 10,000 creates is an HTTP request to the stand-in and
 * a watch event back. The target is under KUBERNETES_CONVERGE_TARGET_MS; the bound leaves room to say by how much
 * a run misses it.
 */
export const KUBERNETES_CONVERGE_MAX_MS = 120_000;
export const KUBERNETES_CONVERGE_TARGET_MS = 60_000;
export const STEADY_WARMUP = 2;
export const STEADY_PASSES = 20;
export const PASS_TARGET_MS = 200;
/** `corral serve`'s default reconcile interval (config controller.reconcileIntervalMs). */
export const SERVE_INTERVAL_MS = 1_000;

export const DOCKER_RUNS = 5;
/** Each Docker figure (one run) gives up after this long. */
export const DOCKER_RUN_MAX_MS = 60_000;
/** Removal of a deleted endpoint's container, waited for between runs. */
export const DOCKER_REMOVE_MAX_MS = 30_000;
export const BASELINE_PROBE_EVERY_MS = 5;
export const WORKER_PORT = 8000;

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Logs as `corral serve` writes them (info level, same redaction), into /dev/null. */
export function devNullLogger(): Logger {
  return createLogger({ level: 'info', destination: pino.destination({ dest: '/dev/null', sync: false }) });
}
