/**
 * The routes outside the API prefix: `/healthz` (liveness), `/readyz` (readiness) and `/openapi.json`, which need
 * no key, and `/metrics`, which needs an admin key or the configured scrape token (it names every endpoint, and so
 * every endpoint's URL).
 */
import type { FastifyInstance } from 'fastify';
import { openApiDocument } from '../../contract/openapi/document.js';
import { bearerMatches, presentedBearer, tokenDigest } from '../../crypto/bearer-token.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { AppOptions } from '../app.js';

/** How long /readyz waits for the database's answer. */
const READY_PING_TIMEOUT_MS = 2_000;

/** Liveness, readiness and the OpenAPI document for anyone; Prometheus metrics for admins and the scrape token. */
export function registerSystemRoutes(app: FastifyInstance, o: AppOptions): void {
  // Liveness: always 200 while the process lives, and never waits for the database; `ready` is false while workers
  // cannot run yet (an awaited Docker engine) or the database did not take the last heartbeat (it is out). The
  // body is as it was before /readyz while all is well, for the probes and scripts that read it.
  app.get('/healthz', async () => {
    const runtime = o.readiness?.() ?? { ready: true };
    if (o.databaseTookLastBeat?.() !== false) return { status: 'ok', ...runtime };
    return {
      status: 'ok',
      ready: false,
      reason: "the database did not take this replica's last heartbeat",
      ...(runtime.waitingFor === undefined ? {} : { waitingFor: runtime.waitingFor }),
      database: 'unreachable',
    };
  });
  // Readiness: 200 when this replica can serve (workers can run, the database answers), 503 otherwise.
  app.get('/readyz', async (_request, reply) => {
    const runtime = o.readiness?.() ?? { ready: true };
    const database = o.ping ? await answers(o.ping, READY_PING_TIMEOUT_MS) : true;
    const ready = runtime.ready && database;
    const reasons = [
      ...(database ? [] : [`the database did not answer within ${READY_PING_TIMEOUT_MS / 1000} s`]),
      ...(runtime.ready ? [] : [`waiting for ${runtime.waitingFor ?? 'the runtime'}`]),
    ];
    reply.status(ready ? 200 : 503);
    return {
      status: ready ? 'ok' : 'unavailable',
      ready,
      ...(reasons.length > 0 ? { reason: reasons.join('; ') } : {}),
      ...(runtime.waitingFor === undefined ? {} : { waitingFor: runtime.waitingFor }),
      database: database ? 'ok' : 'unreachable',
      ...(o.replica ? { replica: o.replica.id, leader: o.replica.leading() } : {}),
    };
  });
  app.get('/openapi.json', async (request) => {
    const serverUrl = `${request.protocol}://${request.host}`;
    // The jobs API is on the gateway: on the name the client reached the API by, at the gateway's port.
    return openApiDocument({ serverUrl, gatewayUrl: o.links.gatewayBase(new URL(serverUrl).hostname) });
  });

  const scrapeToken = o.metricsToken === undefined ? undefined : tokenDigest(o.metricsToken);
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
  if (scrapeToken && bearerMatches(authorization, scrapeToken)) return;
  const presented = presentedBearer(authorization);
  const needs = `/metrics needs an admin API key${scrapeToken ? ' or the scrape token (--metrics-token)' : ''}`;
  if (!presented) throw new ApiError('UNAUTHENTICATED', `${needs}: send "Authorization: Bearer <key>"`);
  const principal = await o.authenticator.authenticate(authorization, undefined);
  if (!principal.admin) throw new ApiError('UNAUTHENTICATED', `${needs}; this key is not an admin key`);
}

/** Whether `ping` resolves within `timeoutMs`. */
async function answers(ping: () => Promise<void>, timeoutMs: number): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<boolean>((resolve) => {
    timer = setTimeout(() => resolve(false), timeoutMs);
  });
  try {
    return await Promise.race([
      ping().then(
        () => true,
        () => false,
      ),
      late,
    ]);
  } finally {
    clearTimeout(timer);
  }
}
