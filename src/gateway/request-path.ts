/**
 * The gateway's HTTP request path: Host to endpoint (routing view, then the store), the key check, the refusals,
 * then a slot or a queue place from the endpoint's dispatcher and proxy.ts to the worker, retried on another worker
 * when one could not be reached. Forwarding to another replica wraps `admit` (peer-forwarding.ts).
 */

import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Endpoint } from '../domain/endpoint.js';
import { bodyTooLarge, GatewayError } from '../errors/gateway-catalogue.js';
import { type Affinity, affinityOf } from './affinity.js';
import type { EndpointDispatcher, Lease } from './dispatcher.js';
import { type GatewayContext, noWorkerReached, OUTCOME_STATUS } from './gateway-context.js';
import { authorizationFor } from './invoke-auth.js';
import { attemptOnLeases } from './lease-attempts.js';
import { contentLengthExceeds, type ProxyOutcome, proxyRequest } from './proxy.js';
import { targetProblem } from './request-target.js';
import { serverTiming } from './server-timing.js';
import { workerHeaders } from './worker-headers.js';

/** Serves a request whose endpoint is known (or known not to exist: its 404). */
export type Admit = (
  req: IncomingMessage,
  res: ServerResponse,
  endpoint: Endpoint | undefined,
  arrived: number,
) => void;

/** How long a diverted request waited here: since `arrived`, through a wake from zero when `cold`. */
export interface QueuedWait {
  arrived: number;
  cold: boolean;
}

/** Where a queued request goes when its dispatcher diverts it: true, forwarded; false, it queues here again. */
export interface QueueDiversion {
  divertedToPeer(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    wait: QueuedWait,
  ): Promise<boolean>;
}

const NEVER_DIVERTED: QueueDiversion = { divertedToPeer: async () => false };

export class RequestPath {
  readonly #c: GatewayContext;
  readonly #diversion: QueueDiversion;
  readonly #admit: Admit;

  /** `wrapAdmit`: what stands in front of the key check (forwarding to another replica); none: the check itself. */
  constructor(options: {
    context: GatewayContext;
    diversion?: QueueDiversion;
    wrapAdmit?: (inner: Admit) => Admit;
  }) {
    this.#c = options.context;
    this.#diversion = options.diversion ?? NEVER_DIVERTED;
    const admit: Admit = (req, res, endpoint, arrived) => this.#checkKey(req, res, endpoint, arrived);
    this.#admit = options.wrapAdmit ? options.wrapAdmit(admit) : admit;
  }

  /**
   * node:http 'request' handler. When the endpoint is known and a slot is free (the common case) the request goes
   * to its worker synchronously: no lookup promise, no abort signal, no queue entry.
   */
  readonly handle = (req: IncomingMessage, res: ServerResponse): void => {
    const c = this.#c;
    const arrived = c.o.clock();
    const problem = targetProblem(req);
    if (problem !== undefined) {
      c.write(res, new GatewayError('INVALID_REQUEST', problem));
      return;
    }
    const appName = c.appNameOf(req);
    const known = appName === undefined ? undefined : c.o.routing.endpointByAppName(appName);
    if (known || appName === undefined) {
      this.#admit(req, res, known, arrived);
      return;
    }
    c.lookUp(appName).then(
      (fresh) => this.#admit(req, res, fresh, arrived),
      (error: unknown) => c.lookUpFailed(res, appName, error),
    );
  };

  /**
   * Serves the request if its key allows it (401 otherwise); an unknown endpoint goes on to its 404. Synchronous
   * when the key's check is cached.
   */
  #checkKey(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint | undefined,
    arrived: number,
  ): void {
    const denied = endpoint && this.#c.keys.check(req, endpoint);
    if (denied === undefined) {
      this.#serve(req, res, endpoint, arrived);
    } else if (denied instanceof Promise) {
      denied.then((verdict) =>
        verdict === undefined
          ? this.#serve(req, res, endpoint, arrived)
          : this.#c.fail(res, endpoint as Endpoint, verdict, arrived, 0),
      );
    } else {
      this.#c.fail(res, endpoint as Endpoint, denied, arrived, 0);
    }
  }

  #serve(req: IncomingMessage, res: ServerResponse, endpoint: Endpoint | undefined, arrived: number): void {
    const c = this.#c;
    const refusal = c.refusal(req, endpoint);
    if (refusal) {
      if (endpoint) c.fail(res, endpoint, refusal, arrived, 0);
      else c.write(res, refusal);
      return;
    }
    const routed = endpoint as Endpoint;
    if (contentLengthExceeds(req, c.o.bodyLimitBytes)) {
      c.fail(res, routed, bodyTooLarge(c.o.bodyLimitBytes), arrived, 0);
      return;
    }
    const dispatcher = c.endpoints.dispatcherFor(routed);
    const affinity = affinityOf(req);
    void this.#proxy(
      req,
      res,
      routed,
      dispatcher,
      arrived,
      dispatcher.tryAcquire(undefined, affinity),
      affinity,
    );
  }

  /**
   * Proxies the request on `granted`, or on the slot it waits for in the queue, and tries another worker when one
   * could not be reached (lease-attempts.ts). Only a request that has to wait gets an abort signal, so that its
   * client's disconnect takes it out of the queue; once proxying, the exchange watches the client itself.
   */
  async #proxy(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    dispatcher: EndpointDispatcher,
    arrived: number,
    granted: Lease | undefined,
    affinity: Affinity | undefined,
  ): Promise<void> {
    const c = this.#c;
    let waiting: AbortController | undefined;
    let onClientClose: (() => void) | undefined;
    let cold = false;
    // requestTimeout covers the request at the workers: a retry gets what is left of it.
    let deadline: number | undefined;
    try {
      const end = await attemptOnLeases({
        dispatcher,
        clock: c.o.clock,
        ...(granted ? { granted } : {}),
        ...(affinity === undefined ? {} : { affinity }),
        affinityGone: () => c.affinityGone(endpoint.id, affinity as Affinity),
        waitSignal: (attempt) => {
          if (!waiting) {
            const controller = new AbortController();
            waiting = controller;
            onClientClose = () => {
              if (!res.writableFinished) controller.abort();
            };
            res.on('close', onClientClose);
            // A strict request looks its worker up before it waits: its client may have left meanwhile.
            if (res.closed) onClientClose();
            // A strict-resume request whose worker is not routable waits through its wake (a thaw, a restore).
            cold =
              attempt === 1 &&
              (c.endpoints.wakingFor(endpoint.id, arrived) ||
                (affinity?.mode === 'strict-resume' &&
                  !c.endpoints.isRoutable(endpoint.id, affinity.workerId)));
          }
          return waiting.signal;
        },
        refusalOnRetry: () => c.endpoints.refusalOf(endpoint),
        diverted: () => this.#diversion.divertedToPeer(req, res, endpoint, { arrived, cold }),
        send: async (lease) => {
          const sentAt = c.o.clock();
          deadline ??= sentAt + endpoint.spec.workers.requestTimeoutSeconds * 1000;
          const outcome = await this.#forward(req, res, endpoint, lease, {
            coldStartMs: cold ? sentAt - arrived : undefined,
            arrived,
            timeoutMs: Math.max(1, deadline - sentAt),
          });
          // Before the release: releasing hands the slot to the next queued request at once.
          if (outcome === 'not-sent' || outcome === 'worker-error') c.quarantine(endpoint.id, lease.workerId);
          lease.release();
          if (outcome === 'not-sent') return 'not-sent';
          const status = outcome === 'ok' ? res.statusCode : OUTCOME_STATUS[outcome];
          c.observe(endpoint.id, status, arrived, lease.queuedMs);
          return 'sent';
        },
      });
      if (end.kind === 'refused') c.fail(res, endpoint, end.error, arrived, end.queuedMs);
      else if (end.kind === 'unreached') {
        const strictWorker = affinity && affinity.mode !== 'soft' ? affinity.workerId : undefined;
        c.fail(res, endpoint, noWorkerReached(strictWorker), arrived, end.queuedMs);
      }
    } finally {
      if (onClientClose) res.off('close', onClientClose);
    }
  }

  #forward(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    lease: Lease,
    {
      coldStartMs,
      arrived,
      timeoutMs,
    }: { coldStartMs: number | undefined; arrived: number; timeoutMs: number },
  ): Promise<ProxyOutcome> {
    const responseHeaders = workerHeaders(lease);
    if (coldStartMs !== undefined) {
      responseHeaders['x-corral-cold-start-ms'] = String(coldStartMs);
      const wake = this.#c.o.routing.routableWorkers(endpoint.id).find((w) => w.id === lease.workerId)?.wake;
      responseHeaders['server-timing'] = serverTiming(coldStartMs, wake, arrived);
    }
    return proxyRequest({
      req,
      res,
      pool: this.#c.o.pools.get(lease.address, endpoint.spec.workers.maxConcurrent),
      target: { id: lease.workerId, address: lease.address },
      requestTimeoutMs: timeoutMs,
      responseHeaders,
      bodyLimitBytes: this.#c.o.bodyLimitBytes,
      authorization: authorizationFor(endpoint),
    });
  }
}
