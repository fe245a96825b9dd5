/**
 * The routes outside the API prefix: `/healthz` and `/openapi.json`, which need no key, and `/metrics`, which needs
 * an admin key or the configured scrape token (it names every endpoint, and so every endpoint's URL).
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { openApiDocument } from '../../contract/openapi/document.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { AppOptions } from '../app.js';

/** Liveness and the OpenAPI document for anyone; Prometheus metrics for admins and the scrape token. */
export function registerSystemRoutes(app: FastifyInstance, o: AppOptions): void {
  // Always 200 while the process lives; `ready` is false while workers cannot run yet (an awaited Docker engine).
  app.get('/healthz', async () => ({ status: 'ok', ...(o.readiness?.() ?? { ready: true }) }));
  app.get('/openapi.json', async (request) =>
    openApiDocument({ serverUrl: `${request.protocol}://${request.host}` }),
  );

  const scrapeToken = o.metricsToken === undefined ? undefined : digest(o.metricsToken);
  app.get('/metrics', async (request, reply) => {
    await mayReadMetrics(request.headers.authorization, scrapeToken, o);
    reply.header('content-type', o.metrics.registry.contentType);
    return o.metrics.registry.metrics();
  });
}

/** Passes for the scrape token (compared in constant time) or an admin API key; throws UNAUTHENTICATED otherwise. */
async function mayReadMetrics(
  authorization: string | undefined,
  scrapeToken: Buffer | undefined,
  o: AppOptions,
): Promise<void> {
  const presented = authorization?.replace(/^Bearer\s+/i, '').trim();
  if (presented && scrapeToken && timingSafeEqual(digest(presented), scrapeToken)) return;
  const needs = `/metrics needs an admin API key${scrapeToken ? ' or the scrape token (--metrics-token)' : ''}`;
  if (!presented) throw new ApiError('UNAUTHENTICATED', `${needs}: send "Authorization: Bearer <key>"`);
  const principal = await o.authenticator.authenticate(authorization, undefined);
  if (!principal.admin) throw new ApiError('UNAUTHENTICATED', `${needs}; this key is not an admin key`);
}

/** Fixed-length form of a secret, so that tokens of any length compare in constant time. */
function digest(secret: string): Buffer {
  return createHash('sha256').update(secret).digest();
}
