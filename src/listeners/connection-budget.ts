/**
 * How many connections each listener (the API, the gateway, the worker-facing listener) may hold so that they all
 * fit under the open-file limit: every client connection is a file, a gateway connection can hold a second one to
 * its worker, and the rest of the process (the
 * database's connections, the engine's, health probes, logs) needs files of its own, which `reservedFiles` keeps
 * free. Pure: the configured caps and the limit in, the caps to apply out.
 */

/** One listener's caps (the config file's `connections.api` or `connections.gateway`; the workers' listener's). */
export interface ListenerCaps {
  maxConnections: number;
  maxConnectionsPerClient: number;
}

export interface ConnectionBudget<T extends ListenerCaps> {
  api: T;
  gateway: T;
  /** The worker-facing listener: workers' takes, pings and results (jobs). */
  workers: T;
  /** Files kept for everything but client connections (and the gateway's connections to workers). */
  reservedFiles: number;
  /** Whether the configured caps were lowered to fit under the limit. */
  lowered: boolean;
}

/**
 * The caps to apply under a soft limit of `fileLimit` files (undefined or Infinity: the configured caps as they
 * are). A listener's files are its connections, twice over for the gateway (client and worker side); when the
 * configured caps and the reserve do not fit, every cap (a client's too, so that one address still cannot take a
 * listener's every connection) shrinks by the same factor, and the reserve to a quarter of the limit at most.
 */
export function fitConnections<T extends ListenerCaps>(
  configured: { api: T; gateway: T; workers: T; reservedFiles: number },
  fileLimit: number | undefined,
): ConnectionBudget<T> {
  const { api, gateway, workers } = configured;
  const needed = api.maxConnections + 2 * gateway.maxConnections + workers.maxConnections;
  if (fileLimit === undefined || !Number.isFinite(fileLimit)) {
    return { api, gateway, workers, reservedFiles: configured.reservedFiles, lowered: false };
  }
  const reservedFiles = Math.min(configured.reservedFiles, Math.floor(fileLimit / 4));
  const room = fileLimit - reservedFiles;
  if (needed <= room) return { api, gateway, workers, reservedFiles, lowered: false };
  const factor = room / needed;
  const scale = (caps: T): T => {
    const maxConnections = Math.max(1, Math.floor(caps.maxConnections * factor));
    const perClient = Math.max(1, Math.floor(caps.maxConnectionsPerClient * factor));
    return { ...caps, maxConnections, maxConnectionsPerClient: Math.min(perClient, maxConnections) };
  };
  return { api: scale(api), gateway: scale(gateway), workers: scale(workers), reservedFiles, lowered: true };
}
