/**
 * The local runtime as root without `--local-allow-root`: `corral serve` still runs (API, gateway, everything but
 * workers), and every worker start fails with the reason, so that the endpoint's state and its URL's 503 say what
 * to do instead of a server that would not start.
 */
import type {
  LogOptions,
  PullProgress,
  RuntimeEvent,
  RuntimeWorker,
  WorkerRuntime,
  WorkerSpec,
  WorkerStats,
} from '../types.js';
import { RuntimeError } from '../types.js';

export const ROOT_REFUSAL =
  'refusing the local runtime as root: its workers are host processes and would run as root on this host; ' +
  'run corral as another user, use Docker, or pass --local-allow-root (CORRAL_LOCAL_ALLOW_ROOT=1) to accept it';

/** Everything as the wrapped runtime does, but no worker is ever started. */
export class RootRefusingRuntime implements WorkerRuntime {
  readonly name = 'local' as const;
  readonly #inner: WorkerRuntime;

  constructor(options: { inner: WorkerRuntime }) {
    this.#inner = options.inner;
  }

  async create(_spec: WorkerSpec, _onProgress?: (progress: PullProgress) => void): Promise<RuntimeWorker> {
    throw new RuntimeError('RUNTIME_ERROR', ROOT_REFUSAL);
  }

  remove(workerId: string, options?: { graceSeconds?: number }): Promise<void> {
    return this.#inner.remove(workerId, options);
  }

  list(selector: Record<string, string>): Promise<RuntimeWorker[]> {
    return this.#inner.list(selector);
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
