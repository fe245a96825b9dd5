/**
 * The gateway's node:http server and the timeouts that bound a client (head, idle keep-alive, request, requests per
 * connection); its connection caps are applied by app/connection-limits.ts (listeners/connection-guard.ts).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { type ClientDeadlines, CONNECTIONS_CHECKING_INTERVAL_MS } from '../listeners/client-deadlines.js';
import type { Timers } from '../ports/clock.js';

export interface GatewayHandlers {
  handleRequest(req: IncomingMessage, res: ServerResponse): void;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export interface GatewayServerOptions {
  /** The largest workerConfig.requestTimeout an endpoint may have (the configured limit), in seconds. */
  maxRequestTimeoutSeconds: number;
  /** gateway.queueTimeoutSeconds: how long a request may wait for a slot before it is sent. */
  queueTimeoutSeconds: number;
  /** Client connections' deadlines; DEFAULT_CLIENT_LIMITS where absent. */
  limits?: ClientDeadlines;
}

/**
 * A client must send a request's whole head within this, from its connection or its previous request: it bounds
 * how long a slowloris client, or an idle connection that never sends a head, holds a file.
 */
export const HEADERS_TIMEOUT_MS = 10_000;
/**
 * How long an idle client connection is kept: above the 60 s idle timeout of common load balancers (AWS ALB,
 * Google's is longer still; node's default is 5 s), so that a proxy in front of the gateway, not the gateway,
 * closes an idle connection, and never while it is sending a request on it.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
/** The defaults of `connections.gateway` (config/config.ts holds the same; its test says so). */
export const DEFAULT_CLIENT_LIMITS: ClientDeadlines = {
  headersTimeoutMs: HEADERS_TIMEOUT_MS,
  keepAliveTimeoutMs: KEEP_ALIVE_TIMEOUT_MS,
  maxRequestsPerSocket: 0,
};

/** Room above the longest legitimate request: lookup, retries, the response's last bytes. */
const REQUEST_TIMEOUT_MARGIN_MS = 60_000;

/**
 * The gateway's HTTP server. node's default requestTimeout (300 s to receive a whole request) would cut off a
 * request whose body is still streaming to its worker after 5 minutes, though workerConfig.requestTimeout may be
 * an hour and the queue wait comes before it. The gateway's own deadlines (queue timeout, then requestTimeout at
 * the worker) bound a request; node's is set just above their sum, as a backstop against a body trickling in to
 * a request that is no longer proxied.
 */
export function createGatewayServer(handlers: GatewayHandlers, options: GatewayServerOptions): Server {
  return serveGateway(gatewayServer(options), handlers);
}

/** The gateway's server with its deadlines, serving nothing yet (`serveGateway` hands it the gateway). */
export function gatewayServer(options: GatewayServerOptions): Server {
  const limits = options.limits ?? DEFAULT_CLIENT_LIMITS;
  const server = createServer({
    requestTimeout: requestTimeoutMs(options),
    headersTimeout: limits.headersTimeoutMs,
    connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
  });
  server.keepAliveTimeout = limits.keepAliveTimeoutMs;
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  return server;
}

/** The server serves the gateway's requests and upgrades (before it listens). */
export function serveGateway(server: Server, handlers: GatewayHandlers): Server {
  server.on('request', handlers.handleRequest);
  server.on('upgrade', handlers.handleUpgrade);
  return server;
}

/** node's whole-request deadline: above the longest wait plus the longest request at a worker. */
export function requestTimeoutMs(options: GatewayServerOptions): number {
  return (options.queueTimeoutSeconds + options.maxRequestTimeoutSeconds) * 1000 + REQUEST_TIMEOUT_MARGIN_MS;
}

/**
 * How long the requests in flight get to finish once the gateway stops (its queued ones are answered 503 at once):
 * past it their connections close, so that a request held by a worker that never answers (a frozen one, say) cannot
 * hold the process's shutdown forever.
 */
export const SHUTDOWN_GRACE_MS = 10_000;

/**
 * Stops the gateway's server: no new connection, the idle ones closed at once, the requests in flight given
 * `graceMs` to finish before their connections are closed too. Resolves once every connection is gone.
 */
export function closeGatewayServer(
  server: Server,
  options: { graceMs: number; timers: Timers },
): Promise<void> {
  const { graceMs, timers } = options;
  return new Promise((resolve) => {
    const deadline = timers.setTimeout(() => server.closeAllConnections(), graceMs);
    server.close(() => {
      timers.clearTimeout(deadline);
      resolve();
    });
    server.closeIdleConnections();
  });
}
