/**
 * The worker-facing listener: the one place workers reach Corral (jobs: take a job, post its result, ping). It
 * serves the request handler it is given (the jobs core's worker routes) and answers 404 to everything that handler
 * does not take; its connections are capped (listeners/) and its deadlines allow the take's long poll. Where it
 * listens: workerFacingBaseUrl (worker-facing-url.ts) and, on Docker, runtime/docker/listener-network.ts.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Logger } from 'pino';
import type { ListenerLimits } from '../config/connection-limits.js';
import type { HostPort } from '../config/settings.js';
import { CONNECTIONS_CHECKING_INTERVAL_MS } from '../listeners/client-deadlines.js';
import { guardListener } from './connection-limits.js';
import { listen } from './listen.js';

/** Serves a request it takes and answers true; false leaves it to the listener's 404. */
export type WorkerRequestHandler = (
  request: IncomingMessage,
  response: ServerResponse,
) => boolean | Promise<boolean>;

/**
 * A worker holds a few connections (its take's long poll, pings, results, the stop channel), more with several
 * jobs at once: 64 from one worker address (a container's address is a client), 1,024 in all, counted in the
 * open-file budget with the API's and the gateway's (serve.ts). At 512 and 8,192, outside the budget, 16 containers
 * of one tenant filled the listener and the process's files. The take is held up to ~60 s (the SDK gives up at 90 s).
 */
export const DEFAULT_WORKER_LISTENER_LIMITS: ListenerLimits = {
  maxConnections: 1024,
  maxConnectionsPerClient: 64,
  headersTimeoutMs: 10_000,
  keepAliveTimeoutMs: 65_000,
  maxRequestsPerSocket: 0,
};

/** A request's whole time, the take's long poll included. */
const REQUEST_TIMEOUT_MS = 120_000;

export interface RunningWorkerListener {
  server: Server;
  /** The address and port bound (the port differs from the one asked for when that was 0). */
  address: HostPort;
  close(): Promise<void>;
}

export async function startWorkerListener(options: {
  address: HostPort;
  handler: WorkerRequestHandler;
  logger: Logger;
  limits?: ListenerLimits;
}): Promise<RunningWorkerListener> {
  const { handler, logger } = options;
  const limits = options.limits ?? DEFAULT_WORKER_LISTENER_LIMITS;
  const server = createServer(
    {
      headersTimeout: limits.headersTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      requestTimeout: REQUEST_TIMEOUT_MS,
      connectionsCheckingInterval: CONNECTIONS_CHECKING_INTERVAL_MS,
    },
    (request, response) => {
      void serveOne(handler, request, response, logger);
    },
  );
  server.maxRequestsPerSocket = limits.maxRequestsPerSocket;
  guardListener(server, 'workers', limits, logger);
  await listen(server, options.address);
  const bound = server.address();
  const port = typeof bound === 'object' && bound !== null ? bound.port : options.address.port;
  logger.info({ address: options.address.host, port }, 'worker-facing listener listening');
  return {
    server,
    address: { host: options.address.host, port },
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

async function serveOne(
  handler: WorkerRequestHandler,
  request: IncomingMessage,
  response: ServerResponse,
  logger: Logger,
): Promise<void> {
  try {
    if (await handler(request, response)) return;
    answer(response, 404, { error: 'not a worker route' });
  } catch (error) {
    logger.error({ err: error, method: request.method }, 'worker route failed');
    if (!response.headersSent) answer(response, 500, { error: 'internal error' });
    else response.destroy();
  }
}

function answer(response: ServerResponse, status: number, body: unknown): void {
  response.writeHead(status, { 'content-type': 'application/json' });
  response.end(JSON.stringify(body));
}
