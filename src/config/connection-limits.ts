/**
 * The connection limits of the API's and the gateway's listeners (docs/security.md, Connection limits): their
 * defaults, and the config file's `connections:` read onto them, each client's cap checked against its listener's.
 * What the open-file limit leaves of them is listeners/connection-budget.ts's.
 */
import type { ConfigFile } from './file.js';
import { ConfigError } from './settings.js';

/** One listener's connection limits (docs/security.md, Connection limits). */
export interface ListenerLimits {
  /** Connections open at once; more are closed as they are accepted. */
  maxConnections: number;
  /** Connections open at once from one client address (an IPv6 client: its /64). */
  maxConnectionsPerClient: number;
  /** How long a client may take to send a request's head, from its connection or its previous request. */
  headersTimeoutMs: number;
  /** How long an idle keep-alive connection is kept. */
  keepAliveTimeoutMs: number;
  /** Requests one connection may carry before it is closed; 0: no limit. */
  maxRequestsPerSocket: number;
}

export interface ConnectionLimits {
  /** Open files kept for everything but client connections: the database, the engine, health probes, logs. */
  reservedFiles: number;
  api: ListenerLimits;
  gateway: ListenerLimits;
}

/**
 * 1,024 + 2 x 8,192 + 1,024 (the worker-facing listener, app/worker-listener.ts) + 1,024 reserved = 19,456 files,
 * under a limit of 20,000; with a lower limit `corral serve` lowers every cap to fit (listeners/connection-budget.ts). A head in 10 s: a slow client still sends one in well
 * under a second. The gateway keeps an idle connection 65 s, above the 60 s of common load balancers, so that they
 * close it first; the API, whose clients are CLIs and the dashboard, 30 s.
 */
export const DEFAULT_CONNECTION_LIMITS: ConnectionLimits = {
  reservedFiles: 1024,
  api: {
    maxConnections: 1024,
    maxConnectionsPerClient: 256,
    headersTimeoutMs: 10_000,
    keepAliveTimeoutMs: 30_000,
    maxRequestsPerSocket: 0,
  },
  gateway: {
    maxConnections: 8192,
    maxConnectionsPerClient: 2048,
    headersTimeoutMs: 10_000,
    keepAliveTimeoutMs: 65_000,
    maxRequestsPerSocket: 0,
  },
};

export function connectionLimits(file: ConfigFile['connections']): ConnectionLimits {
  const d = DEFAULT_CONNECTION_LIMITS;
  // A client's cap left out is its default, but never above its listener's cap.
  const listener = (defaults: ListenerLimits, configured: Partial<ListenerLimits> | undefined) => {
    const maxConnections = configured?.maxConnections ?? defaults.maxConnections;
    return {
      ...defaults,
      ...configured,
      maxConnectionsPerClient:
        configured?.maxConnectionsPerClient ?? Math.min(defaults.maxConnectionsPerClient, maxConnections),
    };
  };
  const limits = {
    reservedFiles: file?.reservedFiles ?? d.reservedFiles,
    api: listener(d.api, file?.api),
    gateway: listener(d.gateway, file?.gateway),
  };
  for (const listener of ['api', 'gateway'] as const) {
    const { maxConnections, maxConnectionsPerClient } = limits[listener];
    if (maxConnectionsPerClient > maxConnections) {
      throw new ConfigError(
        `config file: connections.${listener}.maxConnectionsPerClient (${maxConnectionsPerClient}) is above its maxConnections (${maxConnections})`,
      );
    }
  }
  return limits;
}
