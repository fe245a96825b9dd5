/**
 * `corral serve`'s worker-facing listener as one object with a lifecycle: made before the jobs side (which starts
 * queue workers with its URL, `ports/controller-ports.ts` `WorkerFacingAddress`), opened with the jobs' worker
 * routes where the runtime says (worker-listener-place.ts; on an awaited Docker engine, once it answers), closed
 * with the rest. Its URL is '' until it listens.
 */
import type { Logger } from 'pino';
import { type Config, formatHostPort } from '../config/config.js';
import type { ListenerLimits } from '../config/connection-limits.js';
import type { WorkerFacingAddress } from '../ports/controller-ports.js';
import type { WorkerRuntime } from '../runtime/types.js';
import { kubernetesWorkersUrl, workerFacingBaseUrl } from './worker-facing-url.js';
import {
  type RunningWorkerListener,
  startWorkerListener,
  type WorkerRequestHandler,
} from './worker-listener.js';
import type { WorkerListenerPlace } from './worker-listener-place.js';

export interface WorkerFacingListenerOptions {
  place: WorkerListenerPlace;
  /** The runtime's name: where the listener binds and how workers reach it. */
  runtime: WorkerRuntime['name'];
  workers: Config['workers'];
  limits: ListenerLimits;
  logger: Logger;
}

export class WorkerFacingListener implements WorkerFacingAddress {
  readonly #o: WorkerFacingListenerOptions;
  #open: { listener: RunningWorkerListener; url: string } | undefined;

  constructor(options: WorkerFacingListenerOptions) {
    this.#o = options;
  }

  /** Binds where the runtime says and serves `handler` (the jobs' worker routes); a bind that fails names the address. */
  async open(handler: WorkerRequestHandler): Promise<void> {
    const { place, runtime, workers, limits, logger } = this.#o;
    const address = await place.address(runtime);
    const listener = await startWorkerListener({ address, handler, logger, limits }).catch(
      (error: unknown) => {
        throw new Error(
          `cannot listen on workers.listen ${formatHostPort(address)}: ${error instanceof Error ? error.message : String(error)}`,
        );
      },
    );
    const url =
      runtime === 'kubernetes'
        ? kubernetesWorkersUrl({ listen: address, advertiseUrl: workers.advertiseUrl })
        : (workers.advertiseUrl ??
          workerFacingBaseUrl({ runtime, address: address.host, port: listener.address.port }));
    this.#open = { listener, url };
  }

  /** The base URL workers reach it at; '' until it listens. */
  url(): string {
    return this.#open?.url ?? '';
  }

  async close(): Promise<void> {
    await this.#open?.listener.close();
  }
}
