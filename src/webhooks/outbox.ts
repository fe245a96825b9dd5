/**
 * `WebhookOutbox`: the delivery of jobs' webhooks. `enqueue` writes a delivery to the store's outbox (so a restart
 * finds it), then a sweep claims the due ones, signs each attempt (Standard Webhooks, the endpoint's secret), checks
 * the target again after DNS and posts to the checked address; a 2xx ends a delivery, anything else is tried again
 * with backoff until the attempts run out. Several replicas share the outbox: a claim lasts `claimMs`, longer than
 * an attempt can take. Time is injected (clock and timers).
 */
import { randomBytes } from 'node:crypto';
import { webhookHeaders } from '../crypto/webhook-signature.js';
import { type Clock, nextTurn, type Timers } from '../ports/clock.js';
import type { JobWebhookRequest } from '../ports/job-webhooks.js';
import type {
  WebhookDeliveryRecord,
  WebhookDeliveryRepository,
} from '../store/webhooks/webhook-deliveries.js';
import { DEFAULT_RETRY_POLICY, nextAttemptAt, type RetryPolicy } from './backoff.js';
import { type PostOutcome, pinnedPost } from './pinned-post.js';
import { type LookupAll, resolveWebhookTarget, systemLookupAll, type TargetPolicy } from './target-guard.js';

/** What the jobs core hands over when a job reaches a terminal status (ports/job-webhooks.ts). */
export type WebhookRequest = JobWebhookRequest;

/**
 * How one attempt ended: `delivered` (a 2xx), `retrying` (it failed; another attempt comes), `given_up` (it failed
 * and was the last), `refused` (the target is not allowed: nothing was posted).
 */
export type WebhookOutcome = 'delivered' | 'retrying' | 'given_up' | 'refused';

export interface WebhookLogger {
  info(data: object, message: string): void;
  warn(data: object, message: string): void;
}

export interface WebhookOutboxOptions {
  deliveries: WebhookDeliveryRepository;
  /** The endpoint's signing secret (`whsec_...`), made on first use. */
  secretOf(endpointId: string, ownerId: string): Promise<string>;
  policy: TargetPolicy;
  clock: Clock;
  timers: Timers;
  logger: WebhookLogger;
  retry?: RetryPolicy;
  /** The longest one POST may take. Default 10 s. */
  requestTimeoutMs?: number;
  /** How long a claim holds a delivery from other replicas; longer than a POST. Default 60 s. */
  claimMs?: number;
  /** The longest the outbox sleeps between two looks at the store (other replicas' enqueues). Default 5 s. */
  pollMs?: number;
  /** Deliveries claimed per sweep. Default 32. */
  batch?: number;
  lookupAll?: LookupAll;
  /** Told how each attempt ended (the deliveries' metrics); none: nobody. */
  onOutcome?: (endpointId: string, outcome: WebhookOutcome) => void;
}

export class WebhookOutbox {
  readonly #o: WebhookOutboxOptions;
  readonly #retry: RetryPolicy;
  #running = false;
  #timer: unknown;
  #cancelTurn: (() => void) | undefined;
  #sweep: Promise<number> | undefined;
  #again = false;

  constructor(options: WebhookOutboxOptions) {
    this.#o = options;
    this.#retry = options.retry ?? DEFAULT_RETRY_POLICY;
  }

  /** Writes the delivery to the outbox and, when the outbox runs, sweeps at once. */
  async enqueue(request: WebhookRequest): Promise<string> {
    const id = request.id ?? `msg_${randomBytes(16).toString('base64url')}`;
    const now = this.#o.clock();
    await this.#o.deliveries.insert({
      id,
      ownerId: request.ownerId,
      endpointId: request.endpointId,
      jobId: request.jobId,
      url: request.url,
      body: request.body,
      attempts: 0,
      nextAt: now,
      lastError: null,
      createdAt: now,
    });
    this.#poke();
    return id;
  }

  /** Starts sweeping: now, whenever a delivery is enqueued here, when the next is due, and every `pollMs`. */
  start(): void {
    if (this.#running) return;
    this.#running = true;
    this.#poke();
  }

  /** Stops sweeping and waits for the sweep under way; what is left stays in the outbox for the next start. */
  async stop(): Promise<void> {
    this.#running = false;
    this.#cancelTurn?.();
    this.#cancelTurn = undefined;
    if (this.#timer !== undefined) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#sweep?.catch(() => undefined);
  }

  /** One sweep: claims the deliveries due now and makes one attempt of each; answers how many it attempted. */
  async deliverDue(): Promise<number> {
    const now = this.#o.clock();
    const claimed = await this.#o.deliveries.claimDue(
      now,
      now + (this.#o.claimMs ?? 60_000),
      this.#o.batch ?? 32,
    );
    await Promise.all(claimed.map((delivery) => this.#attempt(delivery)));
    return claimed.length;
  }

  #poke(): void {
    if (!this.#running) return;
    if (this.#sweep) {
      this.#again = true;
      return;
    }
    if (this.#cancelTurn) return;
    this.#cancelTurn = nextTurn(this.#o.timers, () => {
      this.#cancelTurn = undefined;
      void this.#loop();
    });
  }

  async #loop(): Promise<void> {
    if (this.#timer !== undefined) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = undefined;
    let attempted = 0;
    do {
      this.#again = false;
      this.#sweep = this.deliverDue();
      try {
        attempted = await this.#sweep;
      } catch (error) {
        attempted = 0;
        this.#o.logger.warn({ err: error }, 'webhook outbox sweep failed');
      } finally {
        this.#sweep = undefined;
      }
    } while (this.#running && (this.#again || attempted === (this.#o.batch ?? 32)));
    if (!this.#running) return;
    const pollMs = this.#o.pollMs ?? 5_000;
    const next = await this.#o.deliveries.nextDueAt().catch(() => undefined);
    if (!this.#running || this.#timer !== undefined) return;
    const wait = next === undefined ? pollMs : Math.min(pollMs, Math.max(0, next - this.#o.clock()));
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#timer = undefined;
      this.#poke();
    }, wait);
  }

  async #attempt(delivery: WebhookDeliveryRecord): Promise<void> {
    const { deliveries, logger } = this.#o;
    const attempts = delivery.attempts + 1;
    const log = { deliveryId: delivery.id, jobId: delivery.jobId, endpointId: delivery.endpointId, attempts };
    const target = await resolveWebhookTarget(
      delivery.url,
      this.#o.policy,
      this.#o.lookupAll ?? systemLookupAll,
    );
    if (!target.ok) {
      await deliveries.delete(delivery.id);
      logger.warn({ ...log, reason: target.reason }, 'webhook delivery refused: target not allowed');
      this.#o.onOutcome?.(delivery.endpointId, 'refused');
      return;
    }
    let outcome: PostOutcome;
    try {
      const secret = await this.#o.secretOf(delivery.endpointId, delivery.ownerId);
      outcome = await pinnedPost({
        url: target.url,
        address: target.address,
        headers: {
          'content-type': 'application/json',
          'user-agent': 'Corral-Webhooks',
          ...webhookHeaders(secret, delivery.id, this.#o.clock(), delivery.body),
        },
        body: delivery.body,
        timeoutMs: this.#o.requestTimeoutMs ?? 10_000,
      });
    } catch (error) {
      outcome = { error: error instanceof Error ? error.message : String(error) };
    }
    if (outcome.status !== undefined && outcome.status >= 200 && outcome.status < 300) {
      await deliveries.delete(delivery.id);
      logger.info({ ...log, status: outcome.status }, 'webhook delivered');
      this.#o.onOutcome?.(delivery.endpointId, 'delivered');
      return;
    }
    const error = outcome.status !== undefined ? `answered ${outcome.status}` : (outcome.error ?? 'failed');
    const failedAt = this.#o.clock();
    const next = nextAttemptAt(attempts, failedAt, this.#retry);
    if (next === undefined) {
      await deliveries.delete(delivery.id);
      logger.warn({ ...log, error }, 'webhook delivery given up');
      this.#o.onOutcome?.(delivery.endpointId, 'given_up');
      return;
    }
    await deliveries.reschedule(delivery.id, attempts, next, error);
    logger.info({ ...log, error, nextAt: next }, 'webhook delivery failed; will retry');
    this.#o.onOutcome?.(delivery.endpointId, 'retrying');
  }
}
