/**
 * Jobs on `http` endpoints (issue 22, beyond RunPod): each job is delivered as `POST {jobsPath}` with its input as
 * the JSON body, through this replica's own gateway (the endpoint's path form `/e/{appName}{jobsPath}`), so it
 * takes the same queue, worker slots and autoscaler as any request to the endpoint's URL. A 2xx answer with a JSON
 * body is the output; anything else FAILS the job with the status and the body. Jobs are taken from the store by
 * this replica as the pseudo worker `gateway:{replicaId}` (a take of the queue, so exactly one replica delivers
 * each), kept alive while the request runs, and go back to the queue if this replica dies (`lostAfter`).
 *
 * The delivery stays inside its endpoint (issue 29): its key is good for that endpoint alone (service/delivery-keys.ts),
 * a jobsPath stored before the path rule (domain/jobs-path.ts) or a URL that resolves anywhere but under the
 * endpoint's own `/e/{appName}/` FAILS the job unsent, a redirect FAILS it (never followed), and an answer past the
 * jobs' output limit FAILS it with its request closed (job-send.ts).
 *
 * A job cancelled, timed out or past its ttl while its request is in flight (on any replica: the store marks a stop
 * for this replica's pseudo worker, as for a queue worker) has its request aborted: the gateway's connection to the
 * worker closes and its slot is free. The stops are looked for at once when this process marks one (its wake-up)
 * and every `stopCheckMs` while jobs are in flight (another replica's). An aborted job keeps the status that ended
 * it: its result is never applied over it.
 */
import type { Endpoint, EndpointSpec } from '../domain/endpoint.js';
import { JOB_LIMITS, type Job } from '../domain/job.js';
import { jobsPathProblem } from '../domain/jobs-path.js';
import { JobError } from '../errors/jobs-catalogue.js';
import type { Clock, Timers } from '../ports/clock.js';
import type { DeliveryJobStore } from '../store/jobs/job-roles.js';
import type { JobsLogger } from './http-io.js';
import { announceEnded } from './job-announcements.js';
import { type JobEvents, wakeKey } from './job-events.js';
import { ERROR_BODY_CHARS, httpSend, isRedirect, type JobSend } from './job-send.js';
import type { Wakeups } from './wakeups.js';

/** Jobs delivered at once per endpoint by one replica (the gateway's queue bounds what reaches workers). */
const IN_FLIGHT_PER_ENDPOINT = 256;

interface InFlight {
  endpointId: string;
  abort: AbortController;
  /** The store marked a stop for it (cancelled, timed out, past its ttl): its status stands. */
  stopped: boolean;
}

export interface HttpDeliveryOptions {
  jobs: DeliveryJobStore;
  events: JobEvents;
  wakeups: Wakeups;
  clock: Clock;
  timers: Timers;
  logger: JobsLogger;
  /** This replica's pseudo worker id for the jobs it delivers. */
  deliveryWorkerId: string;
  /** The live endpoint with this id. */
  findEndpoint: (endpointId: string) => Promise<Endpoint | undefined>;
  /**
   * The gateway's base URL on this host and the key it accepts for the deliveries to one endpoint (that endpoint's
   * alone); undefined until it listens.
   */
  gateway: () => DeliveryGateway | undefined;
  /** How often queued jobs of http endpoints are looked for (jobs queued on another replica, or before a restart). */
  scanMs: number;
  /** How often jobs under delivery are marked alive (under `lostAfter`). */
  keepAliveMs: number;
  /** How often, while jobs are in flight, the store is asked which of them to stop (another replica's cancel). */
  stopCheckMs: number;
  /**
   * How long past a job's executionTimeout its request is aborted here if no sweep has timed it out (the store
   * unreachable): the sweeper's TIMED_OUT comes first.
   */
  backstopMs: number;
  maxAttempts: number;
  /** The most bytes of a job's answer kept as its output; absent: a worker's result limit (`JOB_LIMITS`). */
  answerLimitBytes?: number;
  /** Sends a job's request; absent: `httpSend`. */
  send?: JobSend;
}

export interface DeliveryGateway {
  url: string;
  keyFor: (endpointId: string) => string;
}

export class HttpDelivery {
  readonly #o: HttpDeliveryOptions;
  /** Jobs being delivered now, by id. */
  readonly #inFlight = new Map<string, InFlight>();
  /** Ends the stop watch's wait at close. */
  readonly #closing = new AbortController();
  #watching = false;
  /** Endpoints whose queue is being drained now (one drain per endpoint at a time). */
  readonly #draining = new Set<string>();
  #timer: unknown;
  #keepAlive: unknown;
  #closed = false;
  readonly #unsubscribe: () => void;

  constructor(options: HttpDeliveryOptions) {
    this.#o = options;
    this.#unsubscribe = options.events.on('queued', ({ endpointId }) => void this.drain(endpointId));
  }

  start(): void {
    this.#scanLater();
    this.#keepAliveLater();
  }

  /** Delivers the endpoint's queued jobs if it is an `http` endpoint (a queue endpoint's workers take their own). */
  async drain(endpointId: string): Promise<void> {
    if (this.#closed || this.#draining.has(endpointId)) return;
    this.#draining.add(endpointId);
    try {
      const endpoint = await this.#o.findEndpoint(endpointId);
      const gateway = this.#o.gateway();
      if (endpoint?.spec.type !== 'http' || !gateway) return;
      for (;;) {
        const room = IN_FLIGHT_PER_ENDPOINT - this.#countOf(endpointId);
        if (room <= 0 || this.#closed) return;
        const taken = await this.#o.jobs.take({
          endpointId,
          workerId: this.#o.deliveryWorkerId,
          max: room,
          cap: Number.MAX_SAFE_INTEGER,
          now: this.#o.clock(),
        });
        if (taken.length === 0) return;
        for (const job of taken) void this.#deliver(endpoint, job, gateway);
      }
    } catch (error) {
      this.#o.logger.warn({ endpointId, err: describe(error) }, 'http jobs not delivered');
    } finally {
      this.#draining.delete(endpointId);
    }
  }

  async close(): Promise<void> {
    this.#closed = true;
    this.#closing.abort();
    this.#unsubscribe();
    this.#o.timers.clearTimeout(this.#timer);
    this.#o.timers.clearTimeout(this.#keepAlive);
  }

  async #deliver(endpoint: Endpoint, job: Job, gateway: DeliveryGateway): Promise<void> {
    const entry: InFlight = { endpointId: endpoint.id, abort: new AbortController(), stopped: false };
    this.#inFlight.set(job.id, entry);
    this.#watchStops();
    const timeoutMs = job.policy.executionTimeoutMs;
    const backstop = this.#o.timers.setTimeout(() => entry.abort.abort(), timeoutMs + this.#o.backstopMs);
    let result: JobResult;
    try {
      result = await this.#send(endpoint, job, gateway, entry.abort.signal);
    } catch (error) {
      const why = entry.stopped
        ? 'the job was stopped'
        : entry.abort.signal.aborted
          ? `no answer within its executionTimeout (${timeoutMs} ms)`
          : error instanceof JobError && error.code === 'BODY_TOO_LARGE'
            ? `${error.message} of a job's output; the request was closed`
            : `the request failed: ${describe(error)}`;
      result = { status: 'FAILED', output: null, error: why };
    } finally {
      this.#o.timers.clearTimeout(backstop);
      this.#inFlight.delete(job.id);
    }
    try {
      // A stopped job's status stands: the store applies no result over it (the call clears its stop).
      const { outcome, job: done } = await this.#o.jobs.complete({
        jobId: job.id,
        workerId: this.#o.deliveryWorkerId,
        ...result,
        now: this.#o.clock(),
      });
      if (outcome === 'applied' && done) announceEnded(this.#o, done);
    } catch (error) {
      this.#o.logger.warn({ jobId: job.id, err: describe(error) }, 'http job result not stored');
    }
    void this.drain(endpoint.id);
  }

  /** The job's request and its result; a job whose URL would leave its endpoint FAILS unsent. */
  async #send(
    endpoint: Endpoint,
    job: Job,
    gateway: DeliveryGateway,
    signal: AbortSignal,
  ): Promise<JobResult> {
    const target = deliveryUrl(gateway.url, endpoint.spec);
    if ('refused' in target) return { status: 'FAILED', output: null, error: target.refused };
    const answer = await (this.#o.send ?? httpSend)(target.url, {
      headers: {
        'content-type': 'application/json',
        'x-corral-job-id': job.id,
        // A public endpoint needs no key, and its worker would see this one: none is sent.
        ...(endpoint.spec.public ? {} : { authorization: `Bearer ${gateway.keyFor(endpoint.id)}` }),
      },
      body: job.input,
      signal,
      answerLimitBytes: this.#o.answerLimitBytes ?? JOB_LIMITS.resultBytes,
    });
    return answerToResult(answer.status, answer.body);
  }

  /**
   * While jobs are in flight: waits for this process's wake-up of the pseudo worker's stops (a cancel or a sweep
   * here) or `stopCheckMs` (one on another replica), then aborts the requests of the jobs the store says to stop.
   */
  #watchStops(): void {
    if (this.#watching || this.#closed) return;
    this.#watching = true;
    void this.#stopLoop().finally(() => {
      this.#watching = false;
      if (this.#inFlight.size > 0) this.#watchStops();
    });
  }

  async #stopLoop(): Promise<void> {
    const { wakeups, jobs, deliveryWorkerId } = this.#o;
    while (!this.#closed && this.#inFlight.size > 0) {
      await wakeups.wait(wakeKey.stops(deliveryWorkerId), this.#o.stopCheckMs, this.#closing.signal);
      if (this.#closed || this.#inFlight.size === 0) return;
      const stops = await jobs.stopsFor(deliveryWorkerId).catch((error: unknown) => {
        this.#o.logger.warn({ err: describe(error) }, 'http job stops not read');
        return [];
      });
      for (const id of stops) {
        const entry = this.#inFlight.get(id);
        if (!entry || entry.stopped) continue;
        entry.stopped = true;
        entry.abort.abort();
      }
    }
  }

  #countOf(endpointId: string): number {
    let n = 0;
    for (const entry of this.#inFlight.values()) if (entry.endpointId === endpointId) n += 1;
    return n;
  }

  #scanLater(): void {
    if (this.#closed) return;
    this.#timer = this.#o.timers.setTimeout(() => {
      void this.#o.jobs
        .queuedEndpoints()
        .then((ids) => Promise.all(ids.map((id) => this.drain(id))))
        .catch((error: unknown) => this.#o.logger.warn({ err: describe(error) }, 'http jobs scan failed'))
        .finally(() => this.#scanLater());
    }, this.#o.scanMs);
  }

  #keepAliveLater(): void {
    if (this.#closed) return;
    this.#keepAlive = this.#o.timers.setTimeout(() => {
      void this.#o.jobs
        .heartbeat(this.#o.deliveryWorkerId, [...this.#inFlight.keys()], this.#o.clock())
        .catch((error: unknown) =>
          this.#o.logger.warn({ err: describe(error) }, 'http jobs keep-alive failed'),
        )
        .finally(() => this.#keepAliveLater());
    }, this.#o.keepAliveMs);
  }
}

type JobResult = { status: 'COMPLETED' | 'FAILED'; output: string | null; error: string | null };

/**
 * The URL of the endpoint's jobs on the gateway at `gatewayUrl`, or why the job is not sent there: a jobsPath
 * stored before the path rule, or a URL that a parser reads as anything but a path under the endpoint's own
 * `/e/{appName}/` on that gateway.
 */
export function deliveryUrl(
  gatewayUrl: string,
  spec: Pick<EndpointSpec, 'appName' | 'jobsPath'>,
): { url: string } | { refused: string } {
  const shown = JSON.stringify(spec.jobsPath.slice(0, 64));
  const problem = jobsPathProblem(spec.jobsPath);
  if (problem !== undefined)
    return {
      refused: `the endpoint's jobsPath ${shown} ${problem}: the job was not delivered (set a normalised jobsPath with endpoint/update)`,
    };
  const path = `/e/${spec.appName}${spec.jobsPath}`;
  const url = new URL(`${gatewayUrl}${path}`);
  if (url.origin !== new URL(gatewayUrl).origin || url.pathname !== path)
    return {
      refused: `the delivery URL of jobsPath ${shown} resolves to ${url.origin}${url.pathname}, not under the endpoint's own /e/${spec.appName}/: the job was not delivered`,
    };
  return { url: url.href };
}

/**
 * The job's end from the endpoint's answer: a 2xx JSON body is the output; a redirect FAILS saying it was not
 * followed; anything else FAILS with the status and the body.
 */
export function answerToResult(status: number, body: string): JobResult {
  if (isRedirect(status))
    return {
      status: 'FAILED',
      output: null,
      error: `HTTP ${status}: the endpoint answered a redirect, and a job's delivery follows no redirect`,
    };
  if (status >= 200 && status < 300) {
    try {
      JSON.parse(body);
      return { status: 'COMPLETED', output: body, error: null };
    } catch {
      const shown = body.slice(0, ERROR_BODY_CHARS);
      return { status: 'FAILED', output: null, error: `HTTP ${status}: the answer is not JSON: ${shown}` };
    }
  }
  return { status: 'FAILED', output: null, error: `HTTP ${status}: ${body.slice(0, ERROR_BODY_CHARS)}` };
}

function describe(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
