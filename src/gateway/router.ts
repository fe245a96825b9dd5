/**
 * The routes in front of the gateway's paths: a request (or upgrade) goes to the first route that claims it, by
 * its Host and path (and at most the routing view in memory: never the store), else to the endpoints' own path (an
 * endpoint's URL: `{appName}.{domain}` or `/e/{appName}/`). Routes of the gateway's own (an http endpoint's OpenAI
 * route, the jobs API under `/v2/`) join here without touching the request path. Every request asks each route in
 * turn, so a route's `claims` must cost next to nothing for a request that is not its own.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

export interface GatewayRoute {
  /** Whether this route serves the request; decided synchronously from its head. */
  claims(req: IncomingMessage): boolean;
  handleRequest(req: IncomingMessage, res: ServerResponse): void;
  /** Absent: the route takes no upgrades, which go on to the endpoints' path. */
  handleUpgrade?(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export class GatewayRouter {
  readonly #routes: readonly GatewayRoute[];
  readonly #endpoints: Required<GatewayRoute>;

  /** `routes` are asked in order; `endpoints` serves whatever none claims. */
  constructor(options: {
    routes: readonly GatewayRoute[];
    endpoints: Omit<Required<GatewayRoute>, 'claims'>;
  }) {
    this.#routes = options.routes;
    this.#endpoints = { claims: () => true, ...options.endpoints };
  }

  readonly handleRequest = (req: IncomingMessage, res: ServerResponse): void => {
    for (const route of this.#routes) {
      if (route.claims(req)) {
        route.handleRequest(req, res);
        return;
      }
    }
    this.#endpoints.handleRequest(req, res);
  };

  readonly handleUpgrade = (req: IncomingMessage, socket: Duplex, head: Buffer): void => {
    for (const route of this.#routes) {
      if (route.handleUpgrade && route.claims(req)) {
        route.handleUpgrade(req, socket, head);
        return;
      }
    }
    this.#endpoints.handleUpgrade(req, socket, head);
  };
}
