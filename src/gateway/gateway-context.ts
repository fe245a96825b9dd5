/**
 * What the gateway's request path, upgrade path and peer forwarding share: the endpoints' dispatchers, the key
 * checks, Host to appName, the store's answer for an endpoint the routing view lacks, the refusals (404, 503) and
 * how an outcome is answered and counted. One object per gateway, built by `Gateway`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Endpoint } from '../domain/endpoint.js';
import { GATEWAY_ERROR_CATALOGUE, GatewayError } from '../errors/gateway-catalogue.js';
import { type Clock, systemTimers, type Timers } from '../ports/clock.js';
import type { RoutingView } from '../ports/routing-view.js';
import type { CallerKeys } from '../service/caller-keys.js';
import { type Affinity, affinityWorkerGone, type NamedWorker } from './affinity.js';
import { answer, queuedHeader } from './answer.js';
import type { EndpointDispatcher, RoutableWorker } from './dispatcher.js';
import { EndpointTable } from './endpoint-table.js';
import { appNameFromHost } from './host.js';
import { InvokeAuth } from './invoke-auth.js';
import { StoreLookup } from './lookup.js';
import type { GatewayMetrics } from './metrics.js';
import type { WorkerPools } from './pools.js';
import type { ProxyOutcome } from './proxy.js';
import { forwardedPrefix, takePathForm } from './request-target.js';

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
  /** Told when a worker's requests in flight go from none to some and back (the usage ledger's active time). */
  onWorkerBusy?: (workerId: string, busy: boolean, at: number) => void;
  /**
   * Told of each request to an endpoint when it is answered, but those refused for their key (401, 403): the idle
   * policies' last traffic (docs/idle-policies.md). Memory only: called once per request.
   */
  onTraffic?: (endpointId: string, at: number) => void;
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
   * The store's record of a worker (its endpoint and state), asked when a strict request names a worker that is not
   * routable (affinity.ts); absent: such a worker is taken to exist, and the request waits for it.
   */
  findWorker?: (workerId: string) => Promise<NamedWorker | undefined>;
  /**
   * Why the endpoint's workers can never be placed on this server (what the controller reports as
   * INSUFFICIENT_GPU), decided from its spec; undefined when they can. Pure: called once per endpoint object.
   * Without it the gateway goes by the endpoint's reported status, which lags a controller pass behind a change.
   */
  neverPlaceable?: (endpoint: Endpoint) => string | undefined;
  /**
   * What a key in `Authorization: Bearer` allows: the one cache of callers' key checks, shared with the jobs routes
   * (service/caller-keys.ts); a request to a non-public endpoint without an allowed key gets 401 (invoke-auth.ts).
   */
  keys: CallerKeys;
  /** Several replicas: forwarding to another replica's gateway; absent (one replica, SQLite): never. */
  forwarding?: GatewayForwarding;
}

/**
 * What a queued request's dispatcher rejects it with when this gateway's share of every worker of the endpoint fell
 * to 0 and another replica holds their slots: the request (or upgrade) leaves the queue and is forwarded there, or
 * queues here again when it cannot be. Never answered to a client.
 */
export const DIVERTED = new GatewayError(
  'ROUTING_UNAVAILABLE',
  "this replica's gateway holds no slot of the endpoint's workers now; the request is forwarded",
);

/** The status recorded in metrics for an exchange that did not end with the worker's own response. */
export const OUTCOME_STATUS: Record<Exclude<ProxyOutcome, 'ok'>, number> = {
  'not-sent': GATEWAY_ERROR_CATALOGUE.WORKER_ERROR.status,
  // A response the worker had started and that was then cut off is a failed request, whatever status it began with.
  'worker-error': GATEWAY_ERROR_CATALOGUE.WORKER_ERROR.status,
  timeout: GATEWAY_ERROR_CATALOGUE.REQUEST_TIMEOUT.status,
  'client-gone': GATEWAY_ERROR_CATALOGUE.CLIENT_GONE.status,
  'body-too-large': GATEWAY_ERROR_CATALOGUE.BODY_TOO_LARGE.status,
  'bad-request': GATEWAY_ERROR_CATALOGUE.INVALID_REQUEST.status,
};

/** A request that never reached a worker is tried on another, at most this many times in all. */
export const MAX_ATTEMPTS = 3;
const MAX_CACHED_HOSTS = 10_000;
/**
 * How long the store's "no endpoint has this appName" is believed, so that a flood of requests for a wrong Host
 * does not query the store once each. Short, since an endpoint created meanwhile is answered 404 until then; the
 * controller's report after its creation (a pass follows every API change) clears it sooner.
 */
const MISS_TTL_MS = 1000;

/** WORKER_ERROR for a request no worker could be reached for; `strictWorker`: the one it was bound to (affinity.ts). */
export function noWorkerReached(strictWorker?: string): GatewayError {
  if (strictWorker !== undefined) {
    return new GatewayError('WORKER_ERROR', `worker ${strictWorker} could not be reached (strict affinity)`, {
      metadata: { attempts: 1, workerId: strictWorker },
    });
  }
  return new GatewayError('WORKER_ERROR', `no worker could be reached in ${MAX_ATTEMPTS} attempts`, {
    metadata: { attempts: MAX_ATTEMPTS },
  });
}

export class GatewayContext {
  readonly o: GatewayOptions;
  /** Each endpoint's dispatcher, in step with the routing view. */
  readonly endpoints: EndpointTable;
  /** Who may call which endpoint: the Authorization header checked (cached) and taken off. */
  readonly keys: InvokeAuth;
  /** The store, asked about appNames the routing view does not know (shared queries, misses kept briefly). */
  readonly #store: StoreLookup<Endpoint>;
  /** Host header -> appName (null: none), so that a Host seen before costs one lookup instead of parsing. */
  readonly #appNames = new Map<string, string | null>();
  /** A recheck of the workers strict requests wait for is under way (one at a time). */
  #rechecking = false;

  constructor(
    options: GatewayOptions,
    hooks: {
      onQueued: (endpointId: string) => void;
      onShareless?: (endpoint: Endpoint, dispatcher: EndpointDispatcher) => void;
    },
  ) {
    this.o = options;
    const timers = options.timers ?? systemTimers;
    this.keys = new InvokeAuth({ keys: options.keys });
    this.#store = new StoreLookup({
      find: options.findEndpoint,
      clock: options.clock,
      missTtlMs: MISS_TTL_MS,
      maxMisses: MAX_CACHED_HOSTS,
    });
    this.endpoints = new EndpointTable({
      routing: options.routing,
      pools: options.pools,
      clock: options.clock,
      timers,
      metrics: options.metrics,
      maxQueueLength: options.maxQueueLength,
      queueTimeoutMs: options.queueTimeoutMs,
      neverPlaceable: options.neverPlaceable,
      onQueued: hooks.onQueued,
      onWorkerBusy: options.onWorkerBusy,
      onSynced: () => {
        // The controller may have seen new endpoints: the store's "none" answers may be wrong now.
        this.#store.forgetMisses();
        void this.#recheckAwaited();
      },
      ...(hooks.onShareless ? { onShareless: hooks.onShareless } : {}),
    });
  }

  /**
   * The appName the request is for: from its Host (`{appName}.{domain}`), or, only when the Host names no endpoint,
   * from the path form `/e/{appName}/...` (stripped from the path the worker sees).
   */
  appNameOf(req: IncomingMessage): string | undefined {
    return this.#appName(req.headers.host) ?? takePathForm(req);
  }

  async endpointFor(req: IncomingMessage): Promise<Endpoint | undefined> {
    const appName = this.appNameOf(req);
    if (appName === undefined) return undefined;
    return this.o.routing.endpointByAppName(appName) ?? this.lookUp(appName);
  }

  /** The store's answer for an appName created since the controller's last pass (its request waits for a worker). */
  async lookUp(appName: string): Promise<Endpoint | undefined> {
    const fresh = await this.#store.find(appName);
    if (fresh) this.o.routing.requestRefresh();
    return fresh;
  }

  lookUpFailed(res: ServerResponse, appName: string, error: unknown): void {
    this.o.logger.warn({ appName, err: error }, 'endpoint lookup failed');
    this.write(res, new GatewayError('ROUTING_UNAVAILABLE'));
  }

  /** Why the request cannot be served at all (404, 503), or undefined when it can. */
  refusal(req: IncomingMessage, endpoint: Endpoint | undefined): GatewayError | undefined {
    if (!endpoint) {
      const prefix = forwardedPrefix(req);
      return new GatewayError(
        'ENDPOINT_NOT_FOUND',
        prefix === undefined
          ? `no endpoint serves ${req.headers.host ?? 'this host'} (an endpoint is {appName}.${this.o.domain} or /e/{appName}/)`
          : `no endpoint serves ${prefix}`,
      );
    }
    if (endpoint.desired === 'stopped') {
      return new GatewayError('ENDPOINT_STOPPED', `endpoint ${endpoint.id} is stopped`);
    }
    const never = this.endpoints.neverPlaceable(endpoint);
    if (never !== undefined) return new GatewayError('NO_CAPACITY', never);
    return this.endpoints.refusalOf(endpoint);
  }

  /**
   * Answers a request of `endpoint` with the gateway's own error (nothing, for a client that is gone) and records
   * it with its real latency and queue wait (499 for a client that left).
   */
  fail(res: ServerResponse, endpoint: Endpoint, error: unknown, arrived: number, queuedMs: number): void {
    const gatewayError =
      error instanceof GatewayError ? error : new GatewayError('WORKER_ERROR', (error as Error).message);
    this.write(res, gatewayError, queuedMs);
    this.observe(endpoint.id, gatewayError.status, arrived, queuedMs);
  }

  observe(endpointId: string, status: number, arrived: number, queuedMs: number): void {
    const now = this.o.clock();
    this.o.metrics?.observeRequest(endpointId, status, now - arrived, queuedMs);
    if (status !== 401 && status !== 403) this.o.onTraffic?.(endpointId, now);
  }

  /** Writes the gateway's own error; with X-Corral-Queue-Ms when the request had an endpoint (0: never queued). */
  write(res: ServerResponse, error: GatewayError, queuedMs?: number): void {
    answer(res, error, { headers: queuedHeader(queuedMs) });
  }

  /**
   * 404 AFFINITY_WORKER_GONE when the worker a strict request names no longer exists; undefined when it is routable
   * or may be again (frozen, starting), or the store cannot say now (the request waits, bounded by the queue timeout).
   */
  async affinityGone(endpointId: string, affinity: Affinity): Promise<GatewayError | undefined> {
    if (this.endpoints.isRoutable(endpointId, affinity.workerId)) return undefined;
    const find = this.o.findWorker;
    if (!find) return undefined;
    let worker: NamedWorker | undefined;
    try {
      worker = await find(affinity.workerId);
    } catch (error) {
      this.o.logger.warn({ endpointId, workerId: affinity.workerId, err: error }, 'worker lookup failed');
      return undefined;
    }
    return affinityWorkerGone(affinity, endpointId, worker);
  }

  /**
   * After each routing change: strict requests waiting for a worker that is not routable (a frozen one stopped for
   * another endpoint's GPUs, say) get their 404 once the store says it is gone, rather than waiting out the timeout.
   */
  async #recheckAwaited(): Promise<void> {
    if (!this.o.findWorker || this.#rechecking) return;
    this.#rechecking = true;
    try {
      for (const { endpointId, dispatcher, workerIds } of this.endpoints.awaitedUnroutable()) {
        for (const workerId of workerIds) {
          const gone = await this.affinityGone(endpointId, { mode: 'strict', workerId });
          if (gone) dispatcher.rejectAwaiting(new Set([workerId]), gone);
        }
      }
    } finally {
      this.#rechecking = false;
    }
  }

  /** A worker whose connection failed: out of routing for a moment, and the routing view asked to look again. */
  quarantine(endpointId: string, workerId: string): void {
    if (!this.endpoints.quarantine(endpointId, workerId)) return;
    this.o.logger.warn({ endpointId, workerId }, 'worker connection failed; no new requests to it for now');
    this.o.routing.requestRefresh();
  }

  #appName(host: string | undefined): string | undefined {
    if (host === undefined) return undefined;
    let appName = this.#appNames.get(host);
    if (appName === undefined) {
      appName = appNameFromHost(host, this.o.domain) ?? null;
      // Bounded: a client sending ever new Host headers costs a re-parse now and then, not memory.
      if (this.#appNames.size >= MAX_CACHED_HOSTS) this.#appNames.clear();
      this.#appNames.set(host, appName);
    }
    return appName ?? undefined;
  }
}
