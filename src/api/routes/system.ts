/** The routes outside the API prefix that need no key: `/healthz`, `/openapi.json` and `/metrics`. */
import type { FastifyInstance } from 'fastify';
import { openApiDocument } from '../../contract/openapi/document.js';
import type { AppOptions } from '../app.js';

/** Unauthenticated: liveness and Prometheus metrics. */
export function registerSystemRoutes(app: FastifyInstance, o: AppOptions): void {
  // Always 200 while the process lives; `ready` is false while workers cannot run yet (an awaited Docker engine).
  app.get('/healthz', async () => ({ status: 'ok', ...(o.readiness?.() ?? { ready: true }) }));
  app.get('/openapi.json', async (request) =>
    openApiDocument({ serverUrl: `${request.protocol}://${request.host}` }),
  );

  app.get('/metrics', async (_request, reply) => {
    reply.header('content-type', o.metrics.registry.contentType);
    return o.metrics.registry.metrics();
  });
}
