// Part 2: the Docker runtime scoped to one owner label, so that the bench's controller leaves other work alone.
import type {
  ImageRequest,
  LogOptions,
  PullProgress,
  RuntimeEvent,
  RuntimeWorker,
  WorkerRuntime,
  WorkerSpec,
  WorkerStats,
} from '../../src/runtime/types.js';

/**
 * The Docker runtime seen through one owner label: the engine is shared (other test suites run Corral containers
 * on it), and a controller removes every managed container whose endpoint it does not know. Listing is the only
 * call that needs the scope; the label filter is applied by the engine, as the unscoped listing's is.
 */
export class ScopedRuntime implements WorkerRuntime {
  readonly name: WorkerRuntime['name'];
  readonly #inner: WorkerRuntime;
  readonly #scope: Record<string, string>;

  constructor(inner: WorkerRuntime, scope: Record<string, string>) {
    this.#inner = inner;
    this.#scope = scope;
    this.name = inner.name;
  }

  create(spec: WorkerSpec, onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    return this.#inner.create(spec, onProgress);
  }
  prepareImage(request: ImageRequest, onProgress?: (progress: PullProgress) => void): Promise<void> {
    return this.#inner.prepareImage(request, onProgress);
  }
  remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    return this.#inner.remove(workerId, options);
  }
  list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    return this.#inner.list({ ...selector, ...this.#scope });
  }
  inspect(workerId: string): Promise<RuntimeWorker | undefined> {
    return this.#inner.inspect(workerId);
  }
  logs(workerId: string, options: LogOptions): AsyncIterable<string> {
    return this.#inner.logs(workerId, options);
  }
  stats(workerId: string): Promise<WorkerStats | undefined> {
    return this.#inner.stats(workerId);
  }
  watch(onEvent: (event: RuntimeEvent) => void): () => void {
    return this.#inner.watch(onEvent);
  }
  close(): Promise<void> {
    return this.#inner.close();
  }
}
