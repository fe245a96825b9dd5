/**
 * A queue worker to replace (it asked with `stopPod`, or kept a job it was told to stop) is drained as its owner's
 * drain would be, with the audit record `worker.recycle` by `corral-jobs`; the controller, asked for a pass, starts
 * its successor.
 */
import type { Clock } from '../ports/clock.js';
import type { ReconcileTrigger } from '../ports/controller-ports.js';
import type { Store } from '../store/store.js';
import type { JobEvents } from './job-events.js';

/** Drains each worker a `recycle` event names, then asks for a pass; a failure is logged, the worker left. */
export function recycleOnRequest(options: {
  events: JobEvents;
  store: Pick<Store, 'endpoints' | 'workers'>;
  clock: Clock;
  trigger?: ReconcileTrigger | undefined;
  logger: { info(data: object, message: string): void; warn(data: object, message: string): void };
}): void {
  const { logger } = options;
  options.events.on('recycle', ({ endpointId, workerId, reason }) => {
    logger.info({ endpointId, workerId, reason }, 'queue worker to be replaced');
    void recycle(options, { endpointId, workerId, reason })
      .then(() => options.trigger?.poke())
      .catch((error: unknown) =>
        logger.warn(
          { workerId, err: error instanceof Error ? error.message : String(error) },
          'worker not recycled',
        ),
      );
  });
}

async function recycle(
  options: { store: Pick<Store, 'endpoints' | 'workers'>; clock: Clock },
  worker: { endpointId: string; workerId: string; reason: string },
): Promise<void> {
  const { store, clock } = options;
  const endpoint = (await store.endpoints.getMany([worker.endpointId]))[0]?.endpoint;
  if (!endpoint) return;
  await store.workers.requestDrain(endpoint.ownerId, worker.workerId, true, {
    at: clock(),
    ownerId: endpoint.ownerId,
    actor: 'corral-jobs',
    action: 'worker.recycle',
    targetId: worker.workerId,
    detail: { reason: worker.reason },
  });
}
