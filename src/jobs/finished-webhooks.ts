/**
 * A job's terminal status goes to its webhook (docs/jobs.md, Webhooks): once per finish, the message's id naming the
 * finish (a retried job's next finish is another delivery), the body its status as `GET status` answers it.
 */
import { jobStatusBody } from '../contract/jobs.js';
import type { Clock } from '../ports/clock.js';
import type { JobWebhooks } from '../ports/job-webhooks.js';
import type { JobsLogger } from './http-io.js';
import type { JobEvents } from './job-events.js';

/** Queues each finished job's status for its webhook (a job without one: nothing); a failed write is logged. */
export function sendFinishedToWebhooks(options: {
  events: JobEvents;
  webhooks: JobWebhooks;
  clock: Clock;
  logger: JobsLogger;
}): void {
  const { webhooks, clock, logger } = options;
  options.events.on('finished', ({ job }) => {
    if (job.webhook === null) return;
    void webhooks
      .enqueue({
        ownerId: job.ownerId,
        endpointId: job.endpointId,
        jobId: job.id,
        url: job.webhook,
        body: jobStatusBody(job, clock()),
        id: `msg_${job.id}_${job.completedAt ?? 0}`,
      })
      .catch((error: unknown) =>
        logger.warn(
          { jobId: job.id, err: error instanceof Error ? error.message : String(error) },
          'job webhook not queued',
        ),
      );
  });
}
