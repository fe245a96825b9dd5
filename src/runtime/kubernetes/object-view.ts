/**
 * Objects of one kind kept in memory from one watch (the pods of this installation, the cluster's nodes): listed
 * once, then watched from the list's resourceVersion; a dropped stream resumes from the last version seen, a 410
 * Gone (the version was compacted away) relists, a failure reconnects with backoff. Readers get the view without an
 * API call while the watch is up; while it is down they wait for one relist (which fails fast when the API server
 * is unreachable).
 */
import type { Logger } from 'pino';
import { systemTimers, type Timers } from '../../ports/clock.js';
import { KubernetesApiError, type ObjectList, type WatchEvent } from './api.js';

/** The two calls a view makes: a list, and a watch from a version (as KubernetesApi's listPods/watchPods). */
export interface ObjectSource<T> {
  list(): Promise<ObjectList<T>>;
  watch(
    options: { resourceVersion: string; signal: AbortSignal },
    onEvent: (event: WatchEvent<T>) => void,
    onEnd: (error: unknown) => void,
  ): Promise<void>;
}

export interface ObjectViewOptions<T> {
  source: ObjectSource<T>;
  /** `pod`, `node`: for messages and logs. */
  kind: string;
  logger: Logger;
  timers?: Timers;
  /** Reconnect backoff; default 200 ms doubling up to 5 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** Every change of an object: `before` undefined when it appeared, `after` undefined when it was deleted. */
  onChange: (before: T | undefined, after: T | undefined) => void;
}

const DEFAULT_BACKOFF = { initialMs: 200, maxMs: 5_000 };

interface Named {
  metadata?: { name?: string; resourceVersion?: string };
}

function nameOf(object: Named): string {
  return object.metadata?.name ?? '';
}

export class ObjectView<T extends Named> {
  readonly #o: ObjectViewOptions<T>;
  readonly #timers: Timers;
  readonly #objects = new Map<string, T>();
  #version = '';
  /** The view follows the API server: listed, and a watch open or being resumed without error. */
  #live = false;
  #closed = false;
  #watch: AbortController | undefined;
  #timer: unknown;
  #backoffMs: number;
  #syncing: Promise<void> | undefined;
  /** The last failure to list or watch, while the view is not live. */
  #failure: KubernetesApiError | undefined;
  /** Counters for tests and logs. */
  readonly stats = { lists: 0, watches: 0, relistsOnGone: 0, reconnects: 0 };

  constructor(options: ObjectViewOptions<T>) {
    this.#o = options;
    this.#timers = options.timers ?? systemTimers;
    this.#backoffMs = (options.backoff ?? DEFAULT_BACKOFF).initialMs;
  }

  /** Whether the view follows the API server now. */
  get live(): boolean {
    return this.#live;
  }

  get resourceVersion(): string {
    return this.#version;
  }

  /** The objects by name, once the view is live: at once while it is, after a relist while it is not (may throw). */
  async objects(): Promise<ReadonlyMap<string, T>> {
    if (!this.#live) await this.sync();
    return this.#objects;
  }

  /** The objects as the view has them now, live or not. */
  current(): ReadonlyMap<string, T> {
    return this.#objects;
  }

  /** Lists now (one list at a time) and opens the watch from it; throws the list's failure. */
  sync(): Promise<void> {
    if (this.#closed)
      return Promise.reject(
        new KubernetesApiError(`the ${this.#o.kind} view is closed`, undefined, '', false),
      );
    this.#syncing ??= this.#relist().finally(() => {
      this.#syncing = undefined;
    });
    return this.#syncing;
  }

  close(): void {
    this.#closed = true;
    this.#live = false;
    this.#watch?.abort();
    if (this.#timer !== undefined) this.#timers.clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  async #relist(): Promise<void> {
    this.#watch?.abort();
    this.#watch = undefined;
    this.stats.lists += 1;
    let list: ObjectList<T>;
    try {
      list = await this.#o.source.list();
    } catch (error) {
      // Whoever asked gets the failure; the view tries again by itself (this relist may have ended a watch or a
      // retry that was under way).
      this.#retryLater(error);
      throw this.#failure ?? error;
    }
    if (this.#closed) return;
    const seen = new Set<string>();
    for (const pod of list.items) {
      const name = nameOf(pod);
      seen.add(name);
      const before = this.#objects.get(name);
      this.#objects.set(name, pod);
      if (before?.metadata?.resourceVersion !== pod.metadata?.resourceVersion) this.#o.onChange(before, pod);
    }
    for (const [name, before] of [...this.#objects]) {
      if (seen.has(name)) continue;
      this.#objects.delete(name);
      this.#o.onChange(before, undefined);
    }
    this.#version = list.resourceVersion;
    this.#failure = undefined;
    this.#live = true;
    this.#backoffMs = (this.#o.backoff ?? DEFAULT_BACKOFF).initialMs;
    await this.#openWatch();
  }

  async #openWatch(): Promise<void> {
    if (this.#closed) return;
    const controller = new AbortController();
    this.#watch = controller;
    this.stats.watches += 1;
    const opened = Date.now();
    let events = 0;
    await this.#o.source
      .watch(
        { resourceVersion: this.#version, signal: controller.signal },
        (event) => {
          events += 1;
          this.#event(event, controller);
        },
        (error) => {
          if (controller.signal.aborted || this.#watch !== controller) return;
          this.#watch = undefined;
          if (error === undefined && (events > 0 || Date.now() - opened >= 1_000)) {
            // The server ended the stream, as it does now and then: resume from the last version at once.
            this.#backoffMs = (this.#o.backoff ?? DEFAULT_BACKOFF).initialMs;
            this.stats.reconnects += 1;
            void this.#openWatch().catch((e: unknown) => this.#retryLater(e));
            return;
          }
          this.#retryLater(error);
        },
      )
      .catch((error: unknown) => this.#retryLater(error));
  }

  #event(event: WatchEvent<T>, controller: AbortController): void {
    if (controller.signal.aborted || this.#closed) return;
    if (event.type === 'BOOKMARK') {
      if (event.resourceVersion !== '') this.#version = event.resourceVersion;
      return;
    }
    if (event.type === 'ERROR') {
      controller.abort();
      this.#watch = undefined;
      if (event.status.code === 410) {
        // Too old a version (compacted): what happened meanwhile is only in a fresh list.
        this.stats.relistsOnGone += 1;
        this.#o.logger.info(
          { kind: this.#o.kind, resourceVersion: this.#version },
          'watch expired; listing again',
        );
        void this.sync().catch((error: unknown) => this.#retryLater(error));
        return;
      }
      this.#retryLater(
        new KubernetesApiError(
          `the ${this.#o.kind} watch failed: ${event.status.message ?? event.status.reason ?? 'unknown error'}`,
          event.status.code,
          event.status.reason ?? '',
          false,
        ),
      );
      return;
    }
    const pod = event.object;
    const name = nameOf(pod);
    const version = pod.metadata?.resourceVersion;
    if (version) this.#version = version;
    const before = this.#objects.get(name);
    if (event.type === 'DELETED') {
      this.#objects.delete(name);
      this.#o.onChange(before ?? pod, undefined);
      return;
    }
    this.#objects.set(name, pod);
    this.#o.onChange(before, pod);
  }

  #failed(error: unknown): void {
    const failure =
      error instanceof KubernetesApiError
        ? error
        : new KubernetesApiError(String(error), undefined, '', false, { cause: error });
    this.#failure = failure;
    this.#live = false;
  }

  /** A failed list or watch: tried again after the backoff (the view is not live meanwhile). */
  #retryLater(error: unknown): void {
    if (this.#closed) return;
    this.#failed(error);
    if (this.#timer !== undefined) return;
    const delay = this.#backoffMs;
    const { maxMs } = this.#o.backoff ?? DEFAULT_BACKOFF;
    this.#backoffMs = Math.min(maxMs, this.#backoffMs * 2);
    this.#o.logger.warn(
      { kind: this.#o.kind, err: this.#failure?.message, retryInMs: delay },
      'watch failed; retrying',
    );
    this.#timer = this.#timers.setTimeout(() => {
      this.#timer = undefined;
      if (this.#closed) return;
      this.stats.reconnects += 1;
      // Resume from the last version; a 410 on the way relists.
      const resume = this.#version === '' ? this.sync() : this.#resume();
      resume.catch((e: unknown) => this.#retryLater(e));
    }, delay);
  }

  /** After a failure: a watch from the last version, live again once it opens. */
  async #resume(): Promise<void> {
    this.#failure = undefined;
    await this.#openWatch();
    if (this.#failure === undefined && this.#watch !== undefined) {
      this.#live = true;
      this.#backoffMs = (this.#o.backoff ?? DEFAULT_BACKOFF).initialMs;
    }
  }
}
