/**
 * Probes started workers' health paths on injected timers: fast while a worker has never been ready (so a cold
 * start is routed the moment its app answers), at the check's period after that. Counts passes and failures
 * (health-state.ts decides when they make a worker healthy or not) and tells its owner each result, with the
 * failing probe's cause (probe-result.ts).
 */
import type { HealthCheck } from '../../domain/endpoint.js';
import { ROOT_PATH } from '../../domain/health-path.js';
import type { Timers } from '../../ports/clock.js';
import { type HealthCounters, nextHealth, UNKNOWN_HEALTH } from './health-state.js';
import { isNotFound, type ProbeResult, probeFailureCause, probePassed } from './probe-result.js';

/** Probes a worker's health path: what it found (a 2xx/3xx answer within the timeout passes). */
export type HealthProbe = (
  address: { host: string; port: number },
  path: string,
  timeoutMs: number,
) => Promise<ProbeResult>;

/** What to probe for a worker now; undefined when it should no longer be probed. */
export interface ProbeTarget {
  address: { host: string; port: number };
  check: HealthCheck;
  /** The port the app was told to listen on, which a failure's cause names (the address may be a published one). */
  appPort: number;
  /** Not ready yet: probe again after the fast interval, not the check's period. */
  fast: boolean;
  /** The worker's own check (a queue worker's polls); absent: the prober's HTTP probe alone. */
  probe?: () => Promise<ProbeResult>;
  /**
   * With `probe`: the HTTP probe of `check.path` must pass too (a queue endpoint with `healthy.path`). It runs once
   * `probe` passed, and the first failure of the two is the result.
   */
  alsoHttp?: true;
  /** The default health path, never named: a 404 there asks `/` instead (health-path.ts, fallsBackToRoot). */
  rootFallback?: true;
}

export interface HealthProberOptions {
  probe: HealthProbe;
  timers: Timers;
  /** Probing interval while a worker has not been ready yet. */
  startingIntervalMs: number;
  /** Asked before each probe and after each result. */
  target: (workerId: string) => ProbeTarget | undefined;
  /**
   * Each result: whether the worker counts as healthy now, whether that flipped with this result, why this probe
   * failed (undefined when it passed), and what it found.
   */
  onResult: (
    workerId: string,
    healthy: boolean,
    flipped: boolean,
    cause: string | undefined,
    result: ProbeResult,
  ) => void;
}

export class HealthProber {
  readonly #o: HealthProberOptions;
  readonly #timers = new Map<string, unknown>();
  readonly #counters = new Map<string, HealthCounters>();
  #closed = false;

  constructor(options: HealthProberOptions) {
    this.#o = options;
  }

  /** Probes the worker after `delayMs` (replacing a probe already scheduled). */
  schedule(workerId: string, delayMs: number): void {
    if (this.#closed) return;
    this.#clearTimer(workerId);
    this.#timers.set(
      workerId,
      this.#o.timers.setTimeout(() => void this.#probeOnce(workerId), delayMs),
    );
  }

  /** No more probes of the worker, and its counts start over if it is probed again. */
  stop(workerId: string): void {
    this.#clearTimer(workerId);
    this.#counters.delete(workerId);
  }

  close(): void {
    this.#closed = true;
    for (const workerId of [...this.#timers.keys()]) this.stop(workerId);
  }

  async #probeOnce(workerId: string): Promise<void> {
    const target = this.#o.target(workerId);
    if (!target || this.#closed) {
      this.#timers.delete(workerId);
      return;
    }
    const { check } = target;
    const timeoutMs = check.timeoutSeconds * 1000;
    const result = await this.#check(target, timeoutMs).catch(
      (error: unknown): ProbeResult => ({
        kind: 'error',
        code: '',
        message: error instanceof Error ? error.message : String(error),
      }),
    );
    if (this.#closed || !this.#o.target(workerId)) return;
    const before = this.#counters.get(workerId) ?? UNKNOWN_HEALTH;
    const after = nextHealth(before, probePassed(result), check);
    this.#counters.set(workerId, after);
    const cause = probeFailureCause(result, { path: check.path, port: target.appPort, timeoutMs });
    this.#o.onResult(workerId, after.healthy, after.healthy !== before.healthy, cause, result);
    const next = this.#o.target(workerId);
    if (!next) return;
    this.schedule(workerId, next.fast ? this.#o.startingIntervalMs : next.check.periodSeconds * 1000);
  }

  async #check(target: ProbeTarget, timeoutMs: number): Promise<ProbeResult> {
    const http = async (): Promise<ProbeResult> => {
      const found = await this.#o.probe(target.address, target.check.path, timeoutMs);
      if (!target.rootFallback || !isNotFound(found)) return found;
      const root = await this.#o.probe(target.address, ROOT_PATH, timeoutMs);
      return root.kind === 'answered' ? { kind: 'root', status: root.status } : found;
    };
    if (!target.probe) return http();
    const own = await target.probe();
    return target.alsoHttp && probePassed(own) ? http() : own;
  }

  #clearTimer(workerId: string): void {
    const timer = this.#timers.get(workerId);
    if (timer !== undefined) this.#o.timers.clearTimeout(timer);
    this.#timers.delete(workerId);
  }
}
