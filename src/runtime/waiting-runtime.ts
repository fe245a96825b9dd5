/**
 * `WaitingRuntime`: the Docker runtime of `--runtime auto` while an engine that should be there does not answer.
 * It probes the engine until it answers, then builds the real runtime and hands every call to it; until then every
 * call fails UNAVAILABLE (nothing runs anywhere, and never on the host), and `readiness()` says what it waits for.
 */
import type { Timers } from '../ports/clock.js';
import {
  type ImageRequest,
  type LogOptions,
  type PullProgress,
  RuntimeError,
  type RuntimeEvent,
  type RuntimeWorker,
  type WorkerRuntime,
  type WorkerSpec,
  type WorkerStats,
} from './types.js';

/** Whether this process can run workers now; `/healthz` reports it. */
export interface Readiness {
  ready: boolean;
  /** What it waits for, while not ready. */
  waitingFor?: string;
}

export interface WaitingRuntimeOptions {
  /** What is waited for, in words (the engine's address). */
  waitingFor: string;
  /** Whether the engine answers now. */
  probe(): Promise<boolean>;
  /** The real runtime, built once the engine answers. */
  build(): Promise<WorkerRuntime>;
  timers: Timers;
  /** Between probes; default 2 s. */
  intervalMs?: number;
  /** Told once, when the engine answers. */
  onReady?: () => void;
}

const DEFAULT_INTERVAL_MS = 2_000;

export class WaitingRuntime implements WorkerRuntime {
  readonly name = 'docker' as const;
  readonly #o: WaitingRuntimeOptions;
  #inner: WorkerRuntime | undefined;
  #closed = false;
  #timer: unknown;
  readonly #watchers = new Set<(event: RuntimeEvent) => void>();
  readonly #unwatch = new Map<(event: RuntimeEvent) => void, () => void>();
  readonly #ready: Promise<boolean>;
  #settle: (ready: boolean) => void = () => {};

  constructor(options: WaitingRuntimeOptions) {
    this.#o = options;
    this.#ready = new Promise((resolve) => {
      this.#settle = resolve;
    });
    this.#schedule(0);
  }

  /** Resolves true once the real runtime runs, false if closed before. */
  whenReady(): Promise<boolean> {
    return this.#ready;
  }

  readiness(): Readiness {
    return this.#inner ? { ready: true } : { ready: false, waitingFor: this.#o.waitingFor };
  }

  create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    return this.#runtime().create(spec, onProgress);
  }

  async prepareImage(request: ImageRequest, onProgress?: (progress: PullProgress) => void): Promise<void> {
    return this.#runtime().prepareImage(request, onProgress);
  }

  remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    return this.#runtime().remove(workerId, options);
  }

  async list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    return this.#runtime().list(selector);
  }

  async inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    return this.#runtime().inspect(workerId);
  }

  logs(workerId: string, options: LogOptions): AsyncIterable<string> {
    return this.#runtime().logs(workerId, options);
  }

  async stats(workerId: string): Promise<WorkerStats | undefined> {
    return this.#runtime().stats(workerId);
  }

  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    this.#watchers.add(onEvent);
    if (this.#inner) this.#unwatch.set(onEvent, this.#inner.watch(onEvent));
    return () => {
      this.#watchers.delete(onEvent);
      this.#unwatch.get(onEvent)?.();
      this.#unwatch.delete(onEvent);
    };
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#o.timers.clearTimeout(this.#timer);
    this.#settle(false);
    await this.#inner?.close();
  }

  #runtime(): WorkerRuntime {
    if (this.#inner) return this.#inner;
    throw new RuntimeError('UNAVAILABLE', `waiting for ${this.#o.waitingFor} to answer`);
  }

  #schedule(ms: number): void {
    this.#timer = this.#o.timers.setTimeout(() => void this.#attempt(), ms);
  }

  async #attempt(): Promise<void> {
    if (this.#closed) return;
    const answers = await this.#o.probe().catch(() => false);
    if (this.#closed) return;
    if (!answers) return this.#schedule(this.#o.intervalMs ?? DEFAULT_INTERVAL_MS);
    let inner: WorkerRuntime;
    try {
      inner = await this.#o.build();
    } catch {
      return this.#schedule(this.#o.intervalMs ?? DEFAULT_INTERVAL_MS);
    }
    if (this.#closed) {
      await inner.close();
      return;
    }
    this.#inner = inner;
    for (const watcher of this.#watchers) this.#unwatch.set(watcher, inner.watch(watcher));
    this.#o.onReady?.();
    this.#settle(true);
  }
}
