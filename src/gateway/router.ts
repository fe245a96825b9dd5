/**
 * The routes in front of the gateway's paths: a request (or upgrade) goes to the first route that claims it, by
 * its Host and path (and at most the routing view in memory: never the store), else to the endpoints' own path (an
 * endpoint's URL: `{appName}.{domain}` or `/e/{appName}/`). Routes of the gateway's own (an http endpoint's OpenAI
 * route, the jobs API under `/v2/`, the model router under `/openai/`, which reroutes each request onto one of the
 * others) join here without touching the request path. Every request asks each route in
 * turn, so a route's `claims` must cost next to nothing for a request that is not its own.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

/** Serves a request as the router would: asks each route in turn, then the endpoints' path. */
export type Reroute = (req: IncomingMessage, res: ServerResponse) => void;

export interface GatewayRoute {
  /** Whether this route serves the request; decided synchronously from its head. */
  claims(req: IncomingMessage): boolean;
  /**
   * `reroute`: the router itself, for a route that serves a request by rewriting it onto another route's path (the
   * model router's `/openai/v1/...` onto `/v2/{endpoint}/openai/v1/...`); what it reroutes must not be its own.
   */
  handleRequest(req: IncomingMessage, res: ServerResponse, reroute: Reroute): void;
  /** Absent: the route takes no upgrades, which go on to the endpoints' path. */
  handleUpgrade?(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

/** The endpoints' own paths, which serve what no route claims. */
interface EndpointsPath {
  handleRequest: Reroute;
  handleUpgrade: NonNullable<GatewayRoute['handleUpgrade']>;
}

export class GatewayRouter {
  readonly #routes: readonly GatewayRoute[];
  readonly #endpoints: EndpointsPath;

  /** `routes` are asked in order; `endpoints` serves whatever none claims. */
  constructor(options: { routes: readonly GatewayRoute[]; endpoints: EndpointsPath }) {
    this.#routes = options.routes;
    this.#endpoints = options.endpoints;
  }

  readonly handleRequest = (req: IncomingMessage, res: ServerResponse): void => {
    for (const route of this.#routes) {
      if (route.claims(req)) {
        route.handleRequest(req, res, this.handleRequest);
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
