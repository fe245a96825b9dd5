/** The gateway's node:http server and the timeouts that bound a client (head, idle keep-alive, request). */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';

export interface GatewayHandlers {
  handleRequest(req: IncomingMessage, res: ServerResponse): void;
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
}

export interface GatewayServerOptions {
  /** The largest workerConfig.requestTimeout an endpoint may have (the configured limit), in seconds. */
  maxRequestTimeoutSeconds: number;
  /** gateway.queueTimeoutSeconds: how long a request may wait for a slot before it is sent. */
  queueTimeoutSeconds: number;
}

/**
 * A client must send a request's whole head within this: it bounds what a slowloris client can hold, and no
 * legitimate client needs longer (node's own default).
 */
export const HEADERS_TIMEOUT_MS = 60_000;
/**
 * How long an idle client connection is kept: above the 60 s idle timeout of common load balancers (AWS ALB,
 * Google's is longer still; node's default is 5 s), so that a proxy in front of the gateway, not the gateway,
 * closes an idle connection, and never while it is sending a request on it.
 */
export const KEEP_ALIVE_TIMEOUT_MS = 65_000;
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
  const server = createServer(
    {
      requestTimeout: requestTimeoutMs(options),
      headersTimeout: HEADERS_TIMEOUT_MS,
    },
    handlers.handleRequest,
  );
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  server.on('upgrade', handlers.handleUpgrade);
  return server;
}

/** node's whole-request deadline: above the longest wait plus the longest request at a worker. */
export function requestTimeoutMs(options: GatewayServerOptions): number {
  return (options.queueTimeoutSeconds + options.maxRequestTimeoutSeconds) * 1000 + REQUEST_TIMEOUT_MARGIN_MS;
}
