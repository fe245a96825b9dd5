/**
 * The gateway: serves each endpoint's URL. Its parts: the router (router.ts) in front, the HTTP request path
 * (request-path.ts) and the upgrade path (upgrade-path.ts) over what they share (gateway-context.ts: dispatchers,
 * keys, lookups, refusals), and, with several replicas, forwarding to another replica wrapped around both
 * (peer-forwarding.ts). It knows nothing of scaling: it reports its queues (QueueSignals) and the autoscaler decides.
 * The server is server.ts, the gateway's own answers answer.ts.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { GatewayError } from '../errors/gateway-catalogue.js';
import type { EndpointQueueSignal, QueueSignals } from '../ports/queue-signals.js';
import type { GatewayEndpointLoad } from './endpoint-table.js';
import { GatewayContext, type GatewayOptions } from './gateway-context.js';
import type { EndpointLoad } from './metrics.js';
import { OpenAIPassthrough } from './openai-passthrough.js';
import { divertWhenSharesMove, PeerForwarding } from './peer-forwarding.js';
import { RequestPath } from './request-path.js';
import { type GatewayRoute, GatewayRouter } from './router.js';
import { UpgradePath } from './upgrade-path.js';

export type { GatewayForwarding, GatewayLogger, GatewayOptions } from './gateway-context.js';

export class Gateway implements QueueSignals {
  readonly #context: GatewayContext;
  readonly #router: GatewayRouter;
  /** Told each time a request has to wait (the autoscaler: a wake or a scale-up may be due). */
  readonly #queuedListeners = new Set<(endpointId: string) => void>();

  /** `routes`: the gateway's own routes in front of the endpoints' (the jobs API's client routes, app/build-jobs.ts). */
  constructor(options: GatewayOptions & { routes?: readonly GatewayRoute[] }) {
    this.#context = new GatewayContext(options, {
      onQueued: (endpointId) => {
        for (const listener of this.#queuedListeners) listener(endpointId);
      },
      ...(options.forwarding
        ? { onShareless: divertWhenSharesMove(options.routing, options.forwarding) }
        : {}),
    });
    const context = this.#context;
    const peers = options.forwarding && new PeerForwarding({ context, forwarding: options.forwarding });
    const requests = new RequestPath(
      peers ? { context, diversion: peers, wrapAdmit: (inner) => peers.wrapAdmit(inner) } : { context },
    );
    const upgrades = new UpgradePath(peers ? { context, diversion: peers } : { context });
    const openai = new OpenAIPassthrough({
      routing: options.routing,
      domain: options.domain,
      endpoints: requests.handle,
    });
    this.#router = new GatewayRouter({
      routes: [openai, ...(options.routes ?? [])],
      endpoints: { handleRequest: requests.handle, handleUpgrade: upgrades.handle },
    });
  }

  /** node:http 'request' handler (router.ts, then the request path). */
  get handleRequest(): (req: IncomingMessage, res: ServerResponse) => void {
    return this.#router.handleRequest;
  }

  /** node:http 'upgrade' handler (router.ts, then the upgrade path). */
  get handleUpgrade(): (req: IncomingMessage, socket: Duplex, head: Buffer) => void {
    return this.#router.handleUpgrade;
  }

  /**
   * The endpoint's queue and its workers' load (the autoscaler's QueueSignals), or undefined when no request has
   * reached it. What is remembered of workers `exists` denies is forgotten.
   */
  queueSignal(endpointId: string, exists: (workerId: string) => boolean): EndpointQueueSignal | undefined {
    return this.#context.endpoints.queueSignal(endpointId, exists);
  }

  /** Resolves once the worker has no request in flight (or after `timeoutMs`): the controller's drain. */
  awaitDrained(endpointId: string, workerId: string, timeoutMs: number): Promise<void> {
    return this.#context.endpoints.awaitDrained(endpointId, workerId, timeoutMs);
  }

  /** A worker's traffic: requests given to it since it became routable, and those in flight now. */
  workerLoad(endpointId: string, workerId: string): { requests: number; inFlight: number } {
    return this.#context.endpoints.workerLoad(endpointId, workerId);
  }

  /** Per endpoint: its queue, each worker's requests in flight and last busy time (shared with other replicas). */
  loads(): GatewayEndpointLoad[] {
    return this.#context.endpoints.loads();
  }

  /** Queue depth and in-flight requests per endpoint, for metrics. */
  stats(): EndpointLoad[] {
    return this.#context.endpoints.stats();
  }

  /** Calls `listener` with the endpoint id each time a request has to wait for a slot. */
  onQueued(listener: (endpointId: string) => void): () => void {
    this.#queuedListeners.add(listener);
    return () => this.#queuedListeners.delete(listener);
  }

  close(): void {
    this.#context.endpoints.close(new GatewayError('ENDPOINT_STOPPED', 'the gateway is shutting down'));
  }
}
