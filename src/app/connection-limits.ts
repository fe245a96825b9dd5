/**
 * The three listeners' connection caps (API, gateway, worker-facing) under the open-file limit (docs/security.md, Connection limits): the soft limit
 * raised to the hard one where it is below (node does so itself at start on most systems), logged, the caps lowered
 * where they would not fit with files left for the rest of the process, and each listener guarded at accept.
 */
import type { Server } from 'node:http';
import type { Logger } from 'pino';
import type { Config } from '../config/config.js';
import type { ListenerLimits } from '../config/connection-limits.js';
import { fitConnections } from '../listeners/connection-budget.js';
import { guardConnections } from '../listeners/connection-guard.js';
import { raiseFileLimit } from '../listeners/file-limit.js';
import { systemClock } from '../ports/clock.js';

/**
 * The configured caps and the worker-facing listener's, fitted under the open-file limit; says the limit and the
 * caps in the log.
 */
export function connectionsUnderFileLimit(
  config: Config,
  workers: ListenerLimits,
  logger: Logger,
): { connections: Config['connections']; workers: ListenerLimits } {
  const files = raiseFileLimit();
  const fitted = fitConnections({ ...config.connections, workers }, files.limit?.soft);
  const count = (n: number | undefined) =>
    n === undefined ? 'unknown' : Number.isFinite(n) ? n : 'unlimited';
  const caps = (listener: ListenerLimits) => ({
    maxConnections: listener.maxConnections,
    maxConnectionsPerClient: listener.maxConnectionsPerClient,
  });
  logger.info(
    {
      openFiles: count(files.limit?.soft),
      openFilesHard: count(files.limit?.hard),
      ...(files.raisedFrom === undefined ? {} : { raisedFrom: files.raisedFrom }),
      reservedFiles: fitted.reservedFiles,
      api: caps(fitted.api),
      gateway: caps(fitted.gateway),
      workers: caps(fitted.workers),
    },
    'open-file limit and connection caps',
  );
  if (files.notRaised !== undefined) {
    logger.warn({ reason: files.notRaised }, 'could not raise the open-file soft limit to the hard limit');
  }
  if (fitted.lowered) {
    logger.warn(
      {
        configured: {
          api: caps(config.connections.api),
          gateway: caps(config.connections.gateway),
          workers: caps(workers),
        },
      },
      'connection caps lowered to fit under the open-file limit; raise the hard limit (ulimit -Hn, LimitNOFILE=) to keep them',
    );
  }
  const { lowered: _logged, workers: fittedWorkers, ...connections } = fitted;
  return { connections, workers: fittedWorkers };
}

/** Caps the listener's connections, in all and per client address (listeners/connection-guard.ts). */
export function guardListener(
  server: Server,
  listener: string,
  limits: ListenerLimits,
  logger: Logger,
): void {
  guardConnections(server, {
    listener,
    maxConnections: limits.maxConnections,
    maxConnectionsPerClient: limits.maxConnectionsPerClient,
    logger,
    clock: systemClock,
  });
}
