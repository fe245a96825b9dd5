/**
 * The gateway's request path: Host to endpoint (routing view, then the store), a slot or a queue place from the
 * endpoint's dispatcher, then proxy.ts or websocket.ts to the worker, retried elsewhere if it never got there.
 * Scaling policy is the autoscaler's; the server is server.ts, the gateway's own answers answer.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { EndpointQueueSignal, QueueSignals } from '../autoscaler/queue-signals.js';
import type { RoutingView } from '../controller/routing-table.js';
import type { Endpoint } from '../domain/endpoint.js';
import { bodyTooLarge, GATEWAY_ERROR_CATALOGUE, GatewayError } from '../errors/gateway-catalogue.js';
import { type Clock, systemTimers, type Timers } from '../service/clock.js';
import type { EndpointKeyGrant } from '../service/invoke-key-service.js';
import { answer, answerUpgrade, queuedHeader } from './answer.js';
import type { EndpointDispatcher, Lease, RoutableWorker } from './dispatcher.js';
import { EndpointTable, type GatewayEndpointLoad } from './endpoint-table.js';
import { FORWARDED_BY } from './headers.js';
import { appNameFromHost } from './host.js';
import { InvokeAuth } from './invoke-auth.js';
import { StoreLookup } from './lookup.js';
import type { EndpointLoad, GatewayMetrics } from './metrics.js';
import { upgradeToPeer } from './peer-upgrade.js';
import type { WorkerPools } from './pools.js';
import { contentLengthExceeds, type ProxyOutcome, proxyRequest } from './proxy.js';
import { forwardedPrefix, takePathForm, targetProblem } from './request-target.js';
import { proxyUpgrade, type UpgradeOutcome } from './websocket.js';

export interface GatewayLogger {
  info(fields: object, message: string): void;
  warn(fields: object, message: string): void;
}

/** Several replicas: how this gateway forwards requests it holds no slot for (docs/operations.md). */
export interface GatewayForwarding {
  /** This replica's id, sent in X-Corral-Forwarded-By. */
  self: string;
  /**
   * The replica whose gateway serves the endpoint's requests instead of this one (cluster/forwarding.ts), given its
   * routable workers (with this gateway's share of each) and their slots; undefined: serve them here.
   */
  target: (
    workers: readonly RoutableWorker[],
    capacity: number,
  ) => { replicaId: string; url: string } | undefined;
  /** Connections to the other replicas' gateways (not the workers' pools, which follow the routing view). */
  pools: WorkerPools;
}

export interface GatewayOptions {
  routing: RoutingView;
  pools: WorkerPools;
  domain: string;
  clock: Clock;
  timers?: Timers;
  logger: GatewayLogger;
  metrics?: GatewayMetrics;
  bodyLimitBytes: number;
  maxQueueLength: number;
  /** How long a request may wait for a slot (also the whole wait of a wake from zero). */
  queueTimeoutMs: number;
  /** The store's answer for an appName the routing view does not know yet (created since its last pass). */
  findEndpoint: (appName: string) => Promise<Endpoint | undefined>;
  /**
   * Why the endpoint's workers can never be placed on this server (what the controller reports as
   * INSUFFICIENT_GPU), decided from its spec; undefined when they can. Pure: called once per endpoint object.
   * Without it the gateway goes by the endpoint's reported status, which lags a controller pass behind a change.
   */
  neverPlaceable?: (endpoint: Endpoint) => string | undefined;
  /**
   * What a key in `Authorization: Bearer` allows (the store's answer; undefined: nothing). Asked once per key per
   * KEY_CACHE_TTL_MS (invoke-auth.ts); a request to a non-public endpoint without an allowed key gets 401.
   */
  verifyKey: (key: string) => Promise<EndpointKeyGrant | undefined>;
  /** Several replicas: forwarding to another replica's gateway; absent (one replica, SQLite): never. */
  forwarding?: GatewayForwarding;
}

/**
 * What a queued request's dispatcher rejects it with when this gateway's share of every worker of the endpoint fell
 * to 0 and another replica holds their slots: the request (or upgrade) leaves the queue and is forwarded there, or
 * queues here again when it cannot be. Never answered to a client.
 */
const DIVERTED = new GatewayError(
  'ROUTING_UNAVAILABLE',
  "this replica's gateway holds no slot of the endpoint's workers now; the request is forwarded",
);
/** Connections to another replica's gateway, per replica. */
const PEER_CONNECTIONS = 64;

/** The status recorded in metrics for an exchange that did not end with the worker's own response. */
const OUTCOME_STATUS: Record<Exclude<ProxyOutcome, 'ok'>, number> = {
  'not-sent': GATEWAY_ERROR_CATALOGUE.WORKER_ERROR.status,
  // A response the worker had started and that was then cut off is a failed request, whatever status it began with.
  'worker-error': GATEWAY_ERROR_CATALOGUE.WORKER_ERROR.status,
  timeout: GATEWAY_ERROR_CATALOGUE.REQUEST_TIMEOUT.status,
  'client-gone': GATEWAY_ERROR_CATALOGUE.CLIENT_GONE.status,
  'body-too-large': GATEWAY_ERROR_CATALOGUE.BODY_TOO_LARGE.status,
  'bad-request': GATEWAY_ERROR_CATALOGUE.INVALID_REQUEST.status,
};

/** A request that never reached a worker is tried on another, at most this many times in all. */
const MAX_ATTEMPTS = 3;
const MAX_CACHED_HOSTS = 10_000;
/**
 * How long the store's "no endpoint has this appName" is believed, so that a flood of requests for a wrong Host
 * does not query the store once each. Short, since an endpoint created meanwhile is answered 404 until then; the
 * controller's report after its creation (a pass follows every API change) clears it sooner.
 */
const MISS_TTL_MS = 1000;

/**
 * Serves each endpoint's URL: routes by Host, takes a slot on the least-loaded worker or waits in the endpoint's
 * FIFO queue, and proxies both ways. It knows nothing of scaling: it reports its queues (QueueSignals) and the
 * autoscaler decides.
 */
export class Gateway implements QueueSignals {
  readonly #o: GatewayOptions;
  /** Each endpoint's dispatcher, in step with the routing view. */
  readonly #endpoints: EndpointTable;
  /** Told each time a request has to wait (the autoscaler: a wake or a scale-up may be due). */
  readonly #queuedListeners = new Set<(endpointId: string) => void>();
  /** The store, asked about appNames the routing view does not know (shared queries, misses kept briefly). */
  readonly #store: StoreLookup<Endpoint>;
  /** Host header -> appName (null: none), so that a Host seen before costs one lookup instead of parsing. */
  readonly #appNames = new Map<string, string | null>();
  /** Who may call which endpoint: the Authorization header checked (cached) and taken off. */
  readonly #keys: InvokeAuth;
  /** A request's Authorization header, kept when forwarding may divert it once queued (its check takes it off). */
  readonly #authorizations = new WeakMap<IncomingMessage, string>();

  constructor(options: GatewayOptions) {
    this.#o = options;
    this.#keys = new InvokeAuth({
      verify: options.verifyKey,
      clock: options.clock,
      timers: options.timers ?? systemTimers,
    });
    this.#store = new StoreLookup({
      find: options.findEndpoint,
      clock: options.clock,
      missTtlMs: MISS_TTL_MS,
      maxMisses: MAX_CACHED_HOSTS,
    });
    this.#endpoints = new EndpointTable({
      routing: options.routing,
      pools: options.pools,
      clock: options.clock,
      timers: options.timers ?? systemTimers,
      metrics: options.metrics,
      maxQueueLength: options.maxQueueLength,
      queueTimeoutMs: options.queueTimeoutMs,
      neverPlaceable: options.neverPlaceable,
      onQueued: (endpointId) => {
        for (const listener of this.#queuedListeners) listener(endpointId);
      },
      // The controller may have seen new endpoints: the store's "none" answers may be wrong now.
      onSynced: () => this.#store.forgetMisses(),
      ...(options.forwarding
        ? { onShareless: (endpoint, dispatcher) => this.#divert(endpoint, dispatcher) }
        : {}),
    });
  }

  /**
   * node:http 'request' handler. When the endpoint is known and a slot is free (the common case) the request goes
   * to its worker synchronously: no lookup promise, no abort signal, no queue entry.
   */
  readonly handleRequest = (req: IncomingMessage, res: ServerResponse): void => {
    const arrived = this.#o.clock();
    const problem = targetProblem(req);
    if (problem !== undefined) {
      this.#write(res, new GatewayError('INVALID_REQUEST', problem));
      return;
    }
    const appName = this.#appNameOf(req);
    const known = appName === undefined ? undefined : this.#o.routing.endpointByAppName(appName);
    if (known || appName === undefined) {
      this.#serveAllowed(req, res, known, arrived);
      return;
    }
    this.#lookUp(appName).then(
      (fresh) => this.#serveAllowed(req, res, fresh, arrived),
      (error: unknown) => this.#lookUpFailed(res, appName, error),
    );
  };

  /**
   * node:http 'upgrade' handler (WebSocket and other upgrades). node:http removes its own error listener from the
   * socket before emitting 'upgrade', so one is added here at once and kept for the socket's whole life: a client
   * that resets while the upgrade waits (for the store, in the queue, between two workers) would otherwise raise
   * an 'error' nobody listens to, which ends the process. Its 'close' is watched from the start too, so that a
   * client that leaves during the lookup is never queued.
   */
  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    const arrived = this.#o.clock();
    socket.on('error', destroyOnError);
    const gone = new AbortController();
    socket.once('close', () => gone.abort());
    void this.#upgrade(req, socket, head, gone.signal, arrived);
  };

  /**
   * The endpoint's queue and its workers' load (the autoscaler's QueueSignals), or undefined when no request has
   * reached it. What is remembered of workers `exists` denies is forgotten.
   */
  queueSignal(endpointId: string, exists: (workerId: string) => boolean): EndpointQueueSignal | undefined {
    return this.#endpoints.queueSignal(endpointId, exists);
  }

  /** Resolves once the worker has no request in flight (or after `timeoutMs`): the controller's drain. */
  awaitDrained(endpointId: string, workerId: string, timeoutMs: number): Promise<void> {
    return this.#endpoints.awaitDrained(endpointId, workerId, timeoutMs);
  }

  /** A worker's traffic: requests given to it since it became routable, and those in flight now. */
  workerLoad(endpointId: string, workerId: string): { requests: number; inFlight: number } {
    return this.#endpoints.workerLoad(endpointId, workerId);
  }

  /** Per endpoint: its queue, each worker's requests in flight and last busy time (shared with other replicas). */
  loads(): GatewayEndpointLoad[] {
    return this.#endpoints.loads();
  }

  /** Queue depth and in-flight requests per endpoint, for metrics. */
  stats(): EndpointLoad[] {
    return this.#endpoints.stats();
  }

  /** Calls `listener` with the endpoint id each time a request has to wait for a slot. */
  onQueued(listener: (endpointId: string) => void): () => void {
    this.#queuedListeners.add(listener);
    return () => this.#queuedListeners.delete(listener);
  }

  close(): void {
    this.#endpoints.close(new GatewayError('ENDPOINT_STOPPED', 'the gateway is shutting down'));
  }

  /**
   * Serves the request if its key allows it (401 otherwise); an unknown endpoint goes on to its 404. Synchronous
   * when the key's check is cached.
   */
  #serveAllowed(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint | undefined,
    arrived: number,
  ): void {
    if (this.#o.forwarding && endpoint) {
      const target = this.#forwardTarget(req, endpoint);
      if (target) {
        void this.#toPeer(req, res, endpoint, target, arrived);
        return;
      }
      keepAuthorization(req, endpoint, this.#authorizations);
    }
    const denied = endpoint && this.#keys.check(req, endpoint);
    if (denied === undefined) {
      this.#serve(req, res, endpoint, arrived);
    } else if (denied instanceof Promise) {
      denied.then((verdict) =>
        verdict === undefined
          ? this.#serve(req, res, endpoint, arrived)
          : this.#fail(res, endpoint as Endpoint, verdict, arrived, 0),
      );
    } else {
      this.#fail(res, endpoint as Endpoint, denied, arrived, 0);
    }
  }

  #serve(req: IncomingMessage, res: ServerResponse, endpoint: Endpoint | undefined, arrived: number): void {
    const refusal = this.#refusal(req, endpoint);
    if (refusal) {
      if (endpoint) this.#fail(res, endpoint, refusal, arrived, 0);
      else this.#write(res, refusal);
      return;
    }
    const routed = endpoint as Endpoint;
    if (contentLengthExceeds(req, this.#o.bodyLimitBytes)) {
      this.#fail(res, routed, bodyTooLarge(this.#o.bodyLimitBytes), arrived, 0);
      return;
    }
    const dispatcher = this.#endpoints.dispatcherFor(routed);
    void this.#proxy(req, res, routed, dispatcher, arrived, dispatcher.tryAcquire());
  }

  /**
   * Proxies the request on `granted`, or on the slot it waits for in the queue, and tries another worker when one
   * could not be reached. Only a request that has to wait gets an abort signal, so that its client's disconnect
   * takes it out of the queue; once proxying, the exchange watches the client itself.
   */
  async #proxy(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    dispatcher: EndpointDispatcher,
    arrived: number,
    granted: Lease | undefined,
  ): Promise<void> {
    let lease = granted;
    let waiting: AbortController | undefined;
    let onClientClose: (() => void) | undefined;
    let cold = false;
    let tried: Set<string> | undefined;
    // requestTimeout covers the request at the workers: a retry gets what is left of it.
    let deadline: number | undefined;
    try {
      for (let attempt = 1; ; attempt++) {
        if (!lease) {
          if (!waiting) {
            const controller = new AbortController();
            waiting = controller;
            onClientClose = () => {
              if (!res.writableFinished) controller.abort();
            };
            res.on('close', onClientClose);
            cold = attempt === 1 && this.#endpoints.wakingFor(endpoint.id, arrived);
          }
          // A retry whose workers all failed, of an endpoint that can get no new one, is answered now.
          const refused = tried && this.#endpoints.refusalOf(endpoint);
          if (refused) return this.#fail(res, endpoint, refused, arrived, 0);
          const waitFrom = this.#o.clock();
          try {
            lease = await dispatcher.acquire({ signal: waiting.signal, exclude: tried });
          } catch (error) {
            if (error !== DIVERTED)
              return this.#fail(res, endpoint, error, arrived, this.#o.clock() - waitFrom);
          }
          if (!lease) {
            // Diverted: forwarded to the replica holding the slots, or back in the queue when it cannot be.
            if (await this.#divertedToPeer(req, res, endpoint)) return;
            attempt -= 1;
            continue;
          }
        }
        const sentAt = this.#o.clock();
        deadline ??= sentAt + endpoint.spec.workers.requestTimeoutSeconds * 1000;
        const outcome = await this.#forward(req, res, endpoint, lease, {
          coldStartMs: cold ? sentAt - arrived : undefined,
          timeoutMs: Math.max(1, deadline - sentAt),
        });
        // Before the release: releasing hands the slot to the next queued request at once.
        if (outcome === 'not-sent' || outcome === 'worker-error')
          this.#quarantine(endpoint.id, lease.workerId);
        lease.release();
        if (outcome === 'not-sent' && attempt === MAX_ATTEMPTS) {
          return this.#fail(
            res,
            endpoint,
            new GatewayError('WORKER_ERROR', `no worker could be reached in ${MAX_ATTEMPTS} attempts`, {
              metadata: { attempts: MAX_ATTEMPTS },
            }),
            arrived,
            lease.queuedMs,
          );
        }
        if (outcome !== 'not-sent') {
          const status = outcome === 'ok' ? res.statusCode : OUTCOME_STATUS[outcome];
          this.#observe(endpoint.id, status, arrived, lease.queuedMs);
          return;
        }
        tried ??= new Set();
        tried.add(lease.workerId);
        lease = dispatcher.tryAcquire(tried);
      }
    } finally {
      if (onClientClose) res.off('close', onClientClose);
    }
  }

  /** Where the request goes instead of this gateway's queue (another replica's gateway), or undefined: here. */
  #forwardTarget(req: IncomingMessage, endpoint: Endpoint): { replicaId: string; url: string } | undefined {
    const forwarding = this.#o.forwarding;
    if (!forwarding || endpoint.desired === 'stopped') return undefined;
    const dispatcher = this.#endpoints.dispatcherFor(endpoint);
    // One forwarding at most: the receiving gateway serves or queues what another forwarded to it.
    if (!dispatcher.sharesNone || req.headers[FORWARDED_BY] !== undefined) return undefined;
    return forwarding.target(
      this.#o.routing.routableWorkers(endpoint.id),
      endpoint.spec.workers.maxConcurrent,
    );
  }

  /**
   * Proxies the request to another replica's gateway, which checks its key, serves or queues it under its own
   * share, and counts it. One that could not be reached leaves the request untouched: it is served here.
   */
  async #toPeer(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    target: { replicaId: string; url: string },
    arrived: number,
  ): Promise<void> {
    if ((await this.#proxyToPeer(req, res, endpoint, target)) !== 'not-sent') return;
    this.#o.logger.warn(
      { endpointId: endpoint.id, replicaId: target.replicaId },
      'could not forward to a replica',
    );
    keepAuthorization(req, endpoint, this.#authorizations);
    const denied = this.#keys.check(req, endpoint);
    const verdict = denied instanceof Promise ? await denied : denied;
    if (verdict !== undefined) return this.#fail(res, endpoint, verdict, arrived, 0);
    this.#serve(req, res, endpoint, arrived);
  }

  /** A queued request diverted: forwarded (true), or false when it must queue here again (key taken off again). */
  async #divertedToPeer(req: IncomingMessage, res: ServerResponse, endpoint: Endpoint): Promise<boolean> {
    const target = this.#forwardTarget(req, endpoint);
    const authorization = this.#authorizations.get(req);
    if (!target) return false;
    if (authorization !== undefined) req.rawHeaders.push('authorization', authorization);
    if ((await this.#proxyToPeer(req, res, endpoint, target)) !== 'not-sent') return true;
    if (authorization !== undefined) req.rawHeaders.splice(-2, 2);
    this.#o.logger.warn(
      { endpointId: endpoint.id, replicaId: target.replicaId },
      'could not forward to a replica',
    );
    return false;
  }

  #proxyToPeer(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    target: { replicaId: string; url: string },
  ): Promise<ProxyOutcome> {
    const forwarding = this.#o.forwarding as GatewayForwarding;
    return proxyRequest({
      req,
      res,
      pool: forwarding.pools.get(target.url, PEER_CONNECTIONS),
      target: { id: target.replicaId },
      // The other gateway may queue it too.
      requestTimeoutMs: endpoint.spec.workers.requestTimeoutSeconds * 1000 + this.#o.queueTimeoutMs,
      bodyLimitBytes: this.#o.bodyLimitBytes,
      // Says the answer came through another replica (a client or a test waiting for this one's own share).
      responseHeaders: { 'x-corral-forwarded-to': target.replicaId },
      toGateway: { forwardedBy: forwarding.self },
    });
  }

  /** The routes or shares changed: requests queued here leave for the replica now holding the slots, if any. */
  #divert(endpoint: Endpoint, dispatcher: EndpointDispatcher): void {
    const forwarding = this.#o.forwarding;
    if (!forwarding) return;
    const workers = this.#o.routing.routableWorkers(endpoint.id);
    if (forwarding.target(workers, endpoint.spec.workers.maxConcurrent)) dispatcher.rejectQueued(DIVERTED);
  }

  #forward(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    lease: Lease,
    { coldStartMs, timeoutMs }: { coldStartMs: number | undefined; timeoutMs: number },
  ): Promise<ProxyOutcome> {
    const responseHeaders: Record<string, string> = {
      'x-corral-worker': lease.workerId,
      'x-corral-queue-ms': String(lease.queuedMs),
    };
    if (coldStartMs !== undefined) responseHeaders['x-corral-cold-start-ms'] = String(coldStartMs);
    return proxyRequest({
      req,
      res,
      pool: this.#o.pools.get(lease.address, endpoint.spec.workers.maxConcurrent),
      target: { id: lease.workerId, address: lease.address },
      requestTimeoutMs: timeoutMs,
      responseHeaders,
      bodyLimitBytes: this.#o.bodyLimitBytes,
    });
  }

  /**
   * An upgrade goes through the same refusals and queue as a request and is counted the same way (with the
   * worker's status when its response head passes, 101 for a WebSocket). Refusals are answered in the JSON error
   * format; only a worker that cannot be reached leaves the socket untouched, for the next attempt.
   */
  async #upgrade(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    gone: AbortSignal,
    arrived: number,
  ): Promise<void> {
    const problem = targetProblem(req);
    if (problem !== undefined) {
      this.#refuseUpgrade(socket, new GatewayError('INVALID_REQUEST', problem), undefined);
      return;
    }
    let endpoint: Endpoint | undefined;
    try {
      endpoint = await this.#endpointFor(req);
    } catch (error) {
      this.#o.logger.warn({ host: req.headers.host, err: error }, 'endpoint lookup failed');
      this.#refuseUpgrade(socket, new GatewayError('ROUTING_UNAVAILABLE'), undefined);
      return;
    }
    if (endpoint && !gone.aborted && (await this.#upgradedAtPeer(req, socket, head, endpoint))) return;
    const denied = endpoint && !gone.aborted ? await this.#keys.check(req, endpoint) : undefined;
    if (endpoint && denied) {
      this.#observe(endpoint.id, denied.status, arrived, 0);
      this.#refuseUpgrade(socket, denied, 0);
      return;
    }
    const refusal = gone.aborted ? clientGone() : this.#refusal(req, endpoint);
    if (refusal) {
      if (endpoint) this.#observe(endpoint.id, refusal.status, arrived, 0);
      this.#refuseUpgrade(socket, refusal, endpoint ? 0 : undefined);
      return;
    }
    const routed = endpoint as Endpoint;
    const dispatcher = this.#endpoints.dispatcherFor(routed);
    const tried = new Set<string>();
    let queuedMs = 0;
    for (let attempt = 1; attempt <= MAX_ATTEMPTS; attempt++) {
      const waitFrom = this.#o.clock();
      if (attempt === 1) this.#endpoints.wakingFor(routed.id, arrived);
      let lease: Lease;
      try {
        lease = await dispatcher.acquire({ signal: gone, exclude: tried });
      } catch (error) {
        if (error === DIVERTED) {
          // Forwarded to the replica holding the slots, or back in the queue when it cannot be.
          if (await this.#upgradedAtPeer(req, socket, head, routed, true)) return;
          attempt -= 1;
          continue;
        }
        const failure = error instanceof GatewayError ? error : new GatewayError('WORKER_ERROR');
        queuedMs = this.#o.clock() - waitFrom;
        this.#observe(routed.id, failure.status, arrived, queuedMs);
        this.#refuseUpgrade(socket, failure, queuedMs);
        return;
      }
      queuedMs = lease.queuedMs;
      const outcome = await this.#tunnel(req, socket, head, routed, lease, arrived);
      // Only an unreachable worker leaves the client's socket untouched: try another, or say so.
      if (outcome !== 'not-sent') return;
      tried.add(lease.workerId);
    }
    this.#observe(routed.id, GATEWAY_ERROR_CATALOGUE.WORKER_ERROR.status, arrived, queuedMs);
    this.#refuseUpgrade(
      socket,
      new GatewayError('WORKER_ERROR', `no worker could be reached in ${MAX_ATTEMPTS} attempts`, {
        metadata: { attempts: MAX_ATTEMPTS },
      }),
      queuedMs,
    );
  }

  /**
   * Tunnels the upgrade to the replica whose gateway serves the endpoint instead of this one, if any (true: it went
   * there, and that gateway checks its key, serves or queues it, and counts it). False: serve it here; the key is
   * kept first, for a diversion once queued. `diverted`: it was queued here, its key check took the key off.
   */
  async #upgradedAtPeer(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    endpoint: Endpoint,
    diverted = false,
  ): Promise<boolean> {
    const forwarding = this.#o.forwarding;
    if (!forwarding) return false;
    const target = this.#forwardTarget(req, endpoint);
    const authorization = diverted ? this.#authorizations.get(req) : undefined;
    if (target) {
      if (authorization !== undefined) req.rawHeaders.push('authorization', authorization);
      const outcome = await upgradeToPeer(req, socket, head, {
        self: forwarding.self,
        target,
        queueTimeoutMs: this.#o.queueTimeoutMs,
      });
      if (outcome !== 'not-sent') return true;
      if (authorization !== undefined) req.rawHeaders.splice(-2, 2);
      this.#o.logger.warn(
        { endpointId: endpoint.id, replicaId: target.replicaId },
        'could not forward an upgrade to a replica',
      );
    }
    if (!diverted) keepAuthorization(req, endpoint, this.#authorizations);
    return false;
  }

  /** One attempt at the upgrade on `lease`'s worker; counted unless the worker could not be reached. */
  async #tunnel(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    endpoint: Endpoint,
    lease: Lease,
    arrived: number,
  ): Promise<UpgradeOutcome> {
    let counted = false;
    const headers = { 'x-corral-worker': lease.workerId, 'x-corral-queue-ms': String(lease.queuedMs) };
    let outcome: UpgradeOutcome;
    try {
      outcome = await proxyUpgrade(req, socket, head, lease.address, headers, {
        workerId: lease.workerId,
        onResponse: (status) => {
          counted = true;
          this.#observe(endpoint.id, status, arrived, lease.queuedMs);
        },
      });
      if (outcome === 'not-sent') this.#quarantine(endpoint.id, lease.workerId);
    } finally {
      lease.release();
    }
    if (!counted && outcome !== 'ok' && outcome !== 'not-sent') {
      this.#observe(endpoint.id, OUTCOME_STATUS[outcome], arrived, lease.queuedMs);
    }
    return outcome;
  }

  /** Answers an upgrade with the gateway's own error, in the JSON format, with X-Corral-Queue-Ms where known. */
  #refuseUpgrade(socket: Duplex, error: GatewayError, queuedMs: number | undefined): void {
    answerUpgrade(socket, error, queuedHeader(queuedMs));
  }

  /** Why the request cannot be served at all (404, 503), or undefined when it can. */
  #refusal(req: IncomingMessage, endpoint: Endpoint | undefined): GatewayError | undefined {
    if (!endpoint) {
      const prefix = forwardedPrefix(req);
      return new GatewayError(
        'ENDPOINT_NOT_FOUND',
        prefix === undefined
          ? `no endpoint serves ${req.headers.host ?? 'this host'} (an endpoint is {appName}.${this.#o.domain} or /e/{appName}/)`
          : `no endpoint serves ${prefix}`,
      );
    }
    if (endpoint.desired === 'stopped') {
      return new GatewayError('ENDPOINT_STOPPED', `endpoint ${endpoint.id} is stopped`);
    }
    const never = this.#endpoints.neverPlaceable(endpoint);
    if (never !== undefined) return new GatewayError('NO_CAPACITY', never);
    return this.#endpoints.refusalOf(endpoint);
  }

  /**
   * The appName the request is for: from its Host (`{appName}.{domain}`), or, only when the Host names no endpoint,
   * from the path form `/e/{appName}/...` (stripped from the path the worker sees).
   */
  #appNameOf(req: IncomingMessage): string | undefined {
    return this.#appName(req.headers.host) ?? takePathForm(req);
  }

  #appName(host: string | undefined): string | undefined {
    if (host === undefined) return undefined;
    let appName = this.#appNames.get(host);
    if (appName === undefined) {
      appName = appNameFromHost(host, this.#o.domain) ?? null;
      // Bounded: a client sending ever new Host headers costs a re-parse now and then, not memory.
      if (this.#appNames.size >= MAX_CACHED_HOSTS) this.#appNames.clear();
      this.#appNames.set(host, appName);
    }
    return appName ?? undefined;
  }

  async #endpointFor(req: IncomingMessage): Promise<Endpoint | undefined> {
    const appName = this.#appNameOf(req);
    if (appName === undefined) return undefined;
    return this.#o.routing.endpointByAppName(appName) ?? this.#lookUp(appName);
  }

  /** The store's answer for an appName created since the controller's last pass (its request waits for a worker). */
  async #lookUp(appName: string): Promise<Endpoint | undefined> {
    const fresh = await this.#store.find(appName);
    if (fresh) this.#o.routing.requestRefresh();
    return fresh;
  }

  #lookUpFailed(res: ServerResponse, appName: string, error: unknown): void {
    this.#o.logger.warn({ appName, err: error }, 'endpoint lookup failed');
    this.#write(res, new GatewayError('ROUTING_UNAVAILABLE'));
  }

  /**
   * Answers a request of `endpoint` with the gateway's own error (nothing, for a client that is gone) and records
   * it with its real latency and queue wait (499 for a client that left).
   */
  #fail(res: ServerResponse, endpoint: Endpoint, error: unknown, arrived: number, queuedMs: number): void {
    const gatewayError =
      error instanceof GatewayError ? error : new GatewayError('WORKER_ERROR', (error as Error).message);
    this.#write(res, gatewayError, queuedMs);
    this.#observe(endpoint.id, gatewayError.status, arrived, queuedMs);
  }

  #observe(endpointId: string, status: number, arrived: number, queuedMs: number): void {
    this.#o.metrics?.observeRequest(endpointId, status, this.#o.clock() - arrived, queuedMs);
  }

  /** Writes the gateway's own error; with X-Corral-Queue-Ms when the request had an endpoint (0: never queued). */
  #write(res: ServerResponse, error: GatewayError, queuedMs?: number): void {
    answer(res, error, { headers: queuedHeader(queuedMs) });
  }

  /** A worker whose connection failed: out of routing for a moment, and the routing view asked to look again. */
  #quarantine(endpointId: string, workerId: string): void {
    if (!this.#endpoints.quarantine(endpointId, workerId)) return;
    this.#o.logger.warn({ endpointId, workerId }, 'worker connection failed; no new requests to it for now');
    this.#o.routing.requestRefresh();
  }
}

/**
 * Keeps the request's one Authorization value before its check takes it off (a diverted request needs it). Not for
 * a public endpoint: its check takes off only Corral keys, which the other replica need not see, and what stays
 * goes on with the request.
 */
function keepAuthorization(
  req: IncomingMessage,
  endpoint: Endpoint,
  kept: WeakMap<IncomingMessage, string>,
): void {
  if (endpoint.spec.public) return;
  const raw = req.rawHeaders;
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i] as string;
    if (name.length === 13 && name.toLowerCase() === 'authorization') {
      kept.set(req, raw[i + 1] as string);
      return;
    }
  }
}

function clientGone(): GatewayError {
  return new GatewayError('CLIENT_GONE', 'the client went away before the endpoint was found');
}

/** The upgrade socket's error listener: a reset or broken client connection just ends the upgrade. */
function destroyOnError(this: Duplex): void {
  this.destroy();
}
