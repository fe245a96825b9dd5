/**
 * The autoscaler's one home outside the pure policy: builds each endpoint's `ScalingInput` from the queue signals
 * (the gateway) and the workers the controller passes in, answers the controller's "how many, and which go?", and
 * arms one timer per endpoint for the moment the decision changes by itself (a queued request reaching the policy's
 * wait, a worker reaching its idle timeout). It asks the controller for a pass through `onRescale` listeners: when
 * a request queues (a wake from zero starts at once) and when such a timer fires.
 */
import type { Endpoint } from '../domain/endpoint.js';
import { isInTier, type WorkerState } from '../domain/worker.js';
import type { Clock, Timers } from '../ports/clock.js';
import type { EndpointQueueSignal, QueueSignals } from '../ports/queue-signals.js';
import { decideScale, nextCheckAt, type ScalingDecision, type ScalingInput } from './autoscaler.js';

/** What the scaler needs of a worker (the controller's records have more). */
export interface ScalableWorker {
  id: string;
  revision: number;
  state: WorkerState;
  createdAt: number;
  readyAt: number | null;
  /** When this process adopted it after a restart: what it did before is unknown, so it is idle from here. */
  adoptedAt?: number;
}

/** The scaler's answer to the controller for one endpoint. */
export interface ScalingAdvice {
  desired: number;
  victims: string[];
  /**
   * Workers with a request in flight or a job held (or being taken), or that strict requests wait for alone
   * (gateway/affinity.ts): no scale-down may pick them, nor move them down an idle tier.
   */
  busy: string[];
  /**
   * Frozen or suspended workers that strict-resume requests wait for, or that a request is in flight on: woken for
   * them (the planner's wakeResting).
   */
  wake: string[];
}

/** The signal of an endpoint no request or job has reached since this process started. */
const NO_TRAFFIC: EndpointQueueSignal = {
  queueLength: 0,
  oldestEnqueuedAt: null,
  inFlight: () => 0,
  lastBusyAt: () => undefined,
};

export interface ScaleDecisionObserver {
  observeScaleDecision(endpointId: string, decision: ScalingDecision, now: number): void;
  retain(exists: (endpointId: string) => boolean): void;
}

export interface ScalerOptions {
  signals: QueueSignals;
  clock: Clock;
  timers: Timers;
  metrics?: ScaleDecisionObserver;
}

export class Scaler {
  readonly #o: ScalerOptions;
  readonly #checks = new Map<string, unknown>();
  /** Endpoint -> the worker count its last advice came to, within its bounds (0 when stopped). */
  readonly #desired = new Map<string, number>();
  readonly #listeners = new Set<() => void>();
  readonly #unsubscribe: () => void;

  constructor(options: ScalerOptions) {
    this.#o = options;
    this.#unsubscribe = options.signals.onQueued(() => this.#rescale());
  }

  /**
   * How many workers of the current revision the endpoint wants (its minimum when no request reached it and it has
   * no worker), the idle workers to remove first, in order, and the busy ones: one decision per endpoint and pass.
   */
  advise(endpoint: Endpoint, workers: readonly ScalableWorker[]): ScalingAdvice {
    // No traffic since this process started, with workers (adopted after a restart, or kept by a minimum since
    // lowered): they go by the idle timeout as any other, never at once.
    const signal =
      this.#o.signals.queueSignal(endpoint.id, (id) => workers.some((w) => w.id === id)) ??
      (workers.length > 0 ? NO_TRAFFIC : undefined);
    if (!signal) {
      const desired = endpoint.spec.workers.minWorkers;
      return this.#advised(endpoint, { desired, victims: [], busy: [], wake: [] });
    }
    const input = this.#input(endpoint, workers, signal);
    this.#scheduleCheck(endpoint.id, nextCheckAt(input));
    const decision = decideScale(input);
    this.#o.metrics?.observeScaleDecision(endpoint.id, decision, input.now);
    const busy = input.workers.filter((w) => w.inFlight > 0).map((w) => w.id);
    // A request in flight on a frozen or suspended worker reached it before its freeze: through another replica's
    // gateway, whose count the drain before the freeze had not read yet. It waits inside the paused process: woken.
    const wake = input.workers.filter((w) => w.inFlight > 0 && isInTier(w.state)).map((w) => w.id);
    for (const w of workers) {
      const awaited = signal.awaited?.(w.id);
      if (awaited && !busy.includes(w.id)) busy.push(w.id);
      if (awaited === 'resume' && !wake.includes(w.id)) wake.push(w.id);
    }
    return this.#advised(endpoint, { desired: decision.desired, victims: decision.victims, busy, wake });
  }

  /**
   * The worker count the endpoint's last advice came to, as the controller acts on it (within minWorkers and
   * maxWorkers; 0 while stopped); undefined before any (this process's controller does not lead, or has not
   * passed yet). The API shows it as `desiredWorkers` (app/serve.ts wires it).
   */
  desired(endpointId: string): number | undefined {
    return this.#desired.get(endpointId);
  }

  #advised(endpoint: Endpoint, advice: ScalingAdvice): ScalingAdvice {
    const { minWorkers, maxWorkers } = endpoint.spec.workers;
    this.#desired.set(
      endpoint.id,
      endpoint.desired === 'stopped' ? 0 : Math.max(minWorkers, Math.min(maxWorkers, advice.desired)),
    );
    return advice;
  }

  /** Endpoints that still exist: timers and metrics of the others go. */
  retain(exists: (endpointId: string) => boolean): void {
    for (const endpointId of [...this.#checks.keys()]) {
      if (!exists(endpointId)) this.#scheduleCheck(endpointId, null);
    }
    for (const endpointId of [...this.#desired.keys()])
      if (!exists(endpointId)) this.#desired.delete(endpointId);
    this.#o.metrics?.retain(exists);
  }

  /** Called whenever the decision may have changed: the controller should pass now. */
  onRescale(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  close(): void {
    this.#unsubscribe();
    for (const endpointId of [...this.#checks.keys()]) this.#scheduleCheck(endpointId, null);
  }

  #rescale(): void {
    for (const listener of this.#listeners) listener();
  }

  #input(endpoint: Endpoint, workers: readonly ScalableWorker[], signal: EndpointQueueSignal): ScalingInput {
    const { spec } = endpoint;
    return {
      now: this.#o.clock(),
      policy: spec.scaling,
      minWorkers: spec.workers.minWorkers,
      maxWorkers: spec.workers.maxWorkers,
      maxConcurrent: spec.workers.maxConcurrent,
      idleTimeoutSeconds: spec.workers.idleTimeoutSeconds,
      queue: { length: signal.queueLength, oldestEnqueuedAt: signal.oldestEnqueuedAt },
      workers: workers
        .filter((w) => w.revision === endpoint.revision)
        .map((w) => ({
          id: w.id,
          state: w.state,
          inFlight: signal.inFlight(w.id),
          // A worker out of routing for a moment (quarantined) keeps its last busy time: falling back to readyAt
          // would make a busy worker that hit one connection error the next scale-down victim. An adopted worker's
          // createdAt is its container's (maybe long ago): before it is ready again it is idle from its adoption.
          lastBusyAt: signal.lastBusyAt(w.id) ?? w.readyAt ?? w.adoptedAt ?? w.createdAt,
          createdAt: w.createdAt,
        })),
    };
  }

  /** One timer per endpoint, for the moment the scaling decision changes by itself (queue wait, idle timeout). */
  #scheduleCheck(endpointId: string, at: number | null): void {
    const { timers, clock } = this.#o;
    const previous = this.#checks.get(endpointId);
    if (previous !== undefined) timers.clearTimeout(previous);
    this.#checks.delete(endpointId);
    if (at === null) return;
    const timer = timers.setTimeout(
      () => {
        this.#checks.delete(endpointId);
        this.#rescale();
      },
      Math.max(0, at - clock()),
    );
    // A pending check must not keep the process alive on its own.
    (timer as { unref?: () => void } | undefined)?.unref?.();
    this.#checks.set(endpointId, timer);
  }
}
