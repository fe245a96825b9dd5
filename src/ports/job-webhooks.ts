/**
 * `JobWebhooks`: what the jobs core asks of the webhooks (built in app/build-webhooks.ts): whether a job's
 * `webhook` target is allowed, said at `run`, and the delivery of a terminal status, which survives a restart.
 */

export interface JobWebhookRequest {
  ownerId: string;
  endpointId: string;
  jobId: string;
  /** The job's `webhook`, checked with `checkTarget` when the job was accepted. */
  url: string;
  /** The job's status body, JSON, posted as it is. */
  body: string;
  /** The `webhook-id`; by default a new `msg_` id. The same id enqueued twice is delivered once. */
  id?: string;
}

export interface JobWebhooks {
  /** The reason a webhook target is refused (answer 400 naming it), or undefined when it is allowed. */
  checkTarget(url: string): Promise<string | undefined>;
  /** Writes the delivery to the outbox and answers its `webhook-id`; it is posted, signed, with retries. */
  enqueue(request: JobWebhookRequest): Promise<string>;
}
