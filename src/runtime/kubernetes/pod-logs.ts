/**
 * A worker pod's log through the API server (pods/log of the worker container), line by line, as the pod adapter
 * serves `logs`: a followed log ends when its reader aborts, when its worker's pod is gone (pod-waits.ts) or at close.
 * A 404 is the worker's only when its pod is gone; a 400 is a container that has written nothing yet.
 */
import type { LogOptions } from '../types.js';
import { RuntimeError } from '../types.js';
import type { KubernetesApi } from './api.js';
import { isApiNotFound, kubernetesError } from './api-errors.js';
import type { Pod } from './objects.js';
import { WORKER_CONTAINER } from './pod-spec.js';
import type { PodWait } from './pod-waits.js';

export interface PodLogsOptions {
  api: Pick<KubernetesApi, 'podLog' | 'readPod' | 'server'>;
  namespace: string;
}

export class PodLogs {
  readonly #api: PodLogsOptions['api'];
  readonly #namespace: string;
  readonly #streams = new Set<AbortController>();

  constructor(options: PodLogsOptions) {
    this.#api = options.api;
    this.#namespace = options.namespace;
  }

  /** The log of `workerId`'s `pod`; `gone` settles once the worker is gone (it is cancelled here at the end). */
  async *read(workerId: string, pod: Pod, options: LogOptions, gone: PodWait): AsyncGenerator<string> {
    const name = pod.metadata?.name ?? '';
    const controller = new AbortController();
    const abort = () => controller.abort();
    options.signal?.addEventListener('abort', abort, { once: true });
    // A followed log ends with its worker, whatever the stream does.
    void gone.promise.then(abort, () => undefined);
    this.#streams.add(controller);
    try {
      let stream: AsyncIterable<Buffer | string>;
      try {
        stream = await this.#api.podLog(this.#namespace, name, {
          container: WORKER_CONTAINER,
          follow: options.follow,
          ...(options.tail === undefined ? {} : { tailLines: options.tail }),
          signal: controller.signal,
        });
      } catch (error) {
        if (isApiNotFound(error)) throw await this.#notFound(workerId, pod, error);
        // 400: the container has not started yet (or is gone): it has written nothing.
        if ((error as { status?: number }).status === 400) {
          options.onOpen?.();
          return;
        }
        throw kubernetesError(error, `cannot read the log of worker ${workerId}`, this.#api.server);
      }
      options.onOpen?.();
      let rest = '';
      try {
        for await (const chunk of stream) {
          const lines = (rest + chunk.toString()).split('\n');
          rest = lines.pop() ?? '';
          for (const line of lines) yield line.replace(/\r$/, '');
          if (controller.signal.aborted) break;
        }
      } catch (error) {
        if (!controller.signal.aborted) throw kubernetesError(error, 'log stream failed', this.#api.server);
      }
      if (rest !== '') yield rest;
    } finally {
      gone.cancel();
      options.signal?.removeEventListener('abort', abort);
      controller.abort();
      this.#streams.delete(controller);
    }
  }

  /** Ends every log being read. */
  close(): void {
    for (const stream of this.#streams) stream.abort();
    this.#streams.clear();
  }

  /**
   * A 404 from pods/log is the pod's only when the pod is gone: the API server answers 404 too when the pod's node
   * cannot be found to ask its kubelet for the log (`pods "gpu-node-1" not found`, naming the node).
   */
  async #notFound(workerId: string, pod: Pod, error: unknown): Promise<RuntimeError> {
    const gone = await this.#api.readPod(this.#namespace, pod.metadata?.name ?? '').then(
      () => false,
      (e: unknown) => isApiNotFound(e),
    );
    if (gone) return new RuntimeError('NOT_FOUND', `worker ${workerId} does not exist`);
    const node = pod.spec?.nodeName ?? '(none)';
    return kubernetesError(
      error,
      `cannot read the log of worker ${workerId}: its pod's node ${node} did not serve it (no such node, or no kubelet answers)`,
      this.#api.server,
    );
  }
}
