/**
 * Several replicas: what this gateway holds no slot for goes to the replica whose gateway does (docs/operations.md).
 * A wrapper around the request path's `admit` (forwarded on arrival), the queue's diversion (forwarded once queued
 * when the shares move) and the upgrade path's (tunnelled there). The request goes as it came, its Authorization
 * included (the key check here never changes it): the receiving gateway checks the key again, serves or queues the
 * request under its own share, and counts it; a peer that cannot be reached leaves the request to be served here.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Endpoint } from '../domain/endpoint.js';
import type { RoutingView } from '../ports/routing-view.js';
import { affinityOf } from './affinity.js';
import type { EndpointDispatcher } from './dispatcher.js';
import { DIVERTED, type GatewayContext, type GatewayForwarding } from './gateway-context.js';
import { FORWARDED_BY } from './headers.js';
import { upgradeToPeer } from './peer-upgrade.js';
import { type ProxyOutcome, proxyRequest } from './proxy.js';
import type { Admit, QueueDiversion, QueuedWait } from './request-path.js';
import { wakeHeaders } from './server-timing.js';
import type { UpgradeDiversion } from './upgrade-path.js';

/** Connections to another replica's gateway, per replica. */
const PEER_CONNECTIONS = 64;

type Target = { replicaId: string; url: string };

/**
 * The routes or shares changed (the endpoint table's `onShareless`): requests queued here leave for the replica now
 * holding the slots, if any; so do strict requests (affinity.ts) waiting for a worker of which this replica holds
 * no slot, for the replica that holds them (with `maxConcurrent` under the replicas' count, each worker's slots are
 * some replicas' only). Needs no gateway part: the table calls it, and PeerForwarding takes them from there.
 */
export function divertWhenSharesMove(
  routing: RoutingView,
  forwarding: Pick<GatewayForwarding, 'target'>,
): (endpoint: Endpoint, dispatcher: EndpointDispatcher) => void {
  return (endpoint, dispatcher) => {
    const workers = routing.routableWorkers(endpoint.id);
    const capacity = endpoint.spec.workers.maxConcurrent;
    if (forwarding.target(workers, capacity)) {
      dispatcher.rejectQueued(DIVERTED);
      return;
    }
    const elsewhere = new Set<string>();
    for (const { id } of dispatcher.stats().awaited) {
      const named = workers.filter((w) => w.id === id);
      if (named.length > 0 && forwarding.target(named, capacity)) elsewhere.add(id);
    }
    if (elsewhere.size > 0) dispatcher.rejectAwaiting(elsewhere, DIVERTED);
  };
}

export class PeerForwarding implements QueueDiversion, UpgradeDiversion {
  readonly #c: GatewayContext;
  readonly #forwarding: GatewayForwarding;

  constructor(options: { context: GatewayContext; forwarding: GatewayForwarding }) {
    this.#c = options.context;
    this.#forwarding = options.forwarding;
  }

  /** The request path's admission with forwarding in front: to the peer holding the slots, else `inner` here. */
  wrapAdmit(inner: Admit): Admit {
    return (req, res, endpoint, arrived) => {
      if (endpoint) {
        const target = this.#target(req, endpoint);
        if (target) {
          void this.#toPeer(req, res, endpoint, target, arrived, inner);
          return;
        }
      }
      inner(req, res, endpoint, arrived);
    };
  }

  /**
   * A queued request diverted: forwarded (true), or false when it must queue here again. One
   * that waited here through a wake from zero has its answer say so (`Server-Timing` with the wake's phases, from
   * the routes), as it would had it been served here: the other gateway serves it at once and knows of no wait.
   */
  async divertedToPeer(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    wait: QueuedWait,
  ): Promise<boolean> {
    const target = this.#target(req, endpoint);
    if (!target) return false;
    const waited = wait.cold
      ? wakeHeaders(
          this.#c.o.clock() - wait.arrived,
          this.#c.o.routing.routableWorkers(endpoint.id),
          wait.arrived,
        )
      : {};
    if ((await this.#proxyToPeer(req, res, endpoint, target, waited)) !== 'not-sent') return true;
    this.#c.o.logger.warn(
      { endpointId: endpoint.id, replicaId: target.replicaId },
      'could not forward to a replica',
    );
    return false;
  }

  /**
   * Tunnels the upgrade to the replica whose gateway serves the endpoint instead of this one, if any (true: it went
   * there, and that gateway checks its key, serves or queues it, and counts it). False: serve it here.
   */
  async upgradedAtPeer(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    endpoint: Endpoint,
  ): Promise<boolean> {
    const target = this.#target(req, endpoint);
    if (target) {
      const outcome = await upgradeToPeer(req, socket, head, {
        self: this.#forwarding.self,
        target,
        queueTimeoutMs: this.#c.o.queueTimeoutMs,
      });
      if (outcome !== 'not-sent') return true;
      this.#c.o.logger.warn(
        { endpointId: endpoint.id, replicaId: target.replicaId },
        'could not forward an upgrade to a replica',
      );
    }
    return false;
  }

  /**
   * Where the request goes instead of this gateway's queue (another replica's gateway), or undefined: here. A strict
   * request goes where its one worker's slots are, if this replica holds none of them.
   */
  #target(req: IncomingMessage, endpoint: Endpoint): Target | undefined {
    // One forwarding at most: the receiving gateway serves or queues what another forwarded to it.
    if (endpoint.desired === 'stopped' || req.headers[FORWARDED_BY] !== undefined) return undefined;
    const workers = this.#c.o.routing.routableWorkers(endpoint.id);
    const capacity = endpoint.spec.workers.maxConcurrent;
    const affinity = affinityOf(req);
    if (affinity && affinity.mode !== 'soft') {
      const named = workers.filter((w) => w.id === affinity.workerId);
      if (named.length > 0) return this.#forwarding.target(named, capacity);
    }
    if (!this.#c.endpoints.dispatcherFor(endpoint).sharesNone) return undefined;
    return this.#forwarding.target(workers, capacity);
  }

  /**
   * Proxies the request to another replica's gateway. One that could not be reached leaves the request untouched:
   * it is admitted here.
   */
  async #toPeer(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    target: Target,
    arrived: number,
    admitHere: Admit,
  ): Promise<void> {
    if ((await this.#proxyToPeer(req, res, endpoint, target)) !== 'not-sent') return;
    this.#c.o.logger.warn(
      { endpointId: endpoint.id, replicaId: target.replicaId },
      'could not forward to a replica',
    );
    admitHere(req, res, endpoint, arrived);
  }

  #proxyToPeer(
    req: IncomingMessage,
    res: ServerResponse,
    endpoint: Endpoint,
    target: Target,
    headers: Record<string, string> = {},
  ): Promise<ProxyOutcome> {
    return proxyRequest({
      req,
      res,
      pool: this.#forwarding.pools.get(target.url, PEER_CONNECTIONS),
      target: { id: target.replicaId },
      // The other gateway may queue it too.
      requestTimeoutMs: endpoint.spec.workers.requestTimeoutSeconds * 1000 + this.#c.o.queueTimeoutMs,
      bodyLimitBytes: this.#c.o.bodyLimitBytes,
      // Says the answer came through another replica (a client or a test waiting for this one's own share).
      responseHeaders: { 'x-corral-forwarded-to': target.replicaId, ...headers },
      toGateway: { forwardedBy: this.#forwarding.self },
    });
  }
}
