/**
 * The endpoint routes: list, get, create, update, delete, stop, start and the event log. Bodies are parsed in
 * contract/ and decided by EndpointService; this file maps HTTP onto them and adds each endpoint's links.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest, RequestPayload } from 'fastify';
import { parseCreateBody, parseUpdateBody, readId } from '../../contract/endpoint-input.js';
import { toWireEndpoint, toWireWorker } from '../../contract/endpoint-output.js';
import { validationError } from '../../contract/errors.js';
import { toWireEvent } from '../../contract/events.js';
import { wireField } from '../../contract/fields.js';
import { ENDPOINT_ID_BODY_KEYS, ENDPOINT_ID_KEYS } from '../../contract/paths.js';
import { readInteger, readPage, readQueryId } from '../../contract/query.js';
import type { Endpoint } from '../../domain/endpoint.js';
import type { ValidationIssue } from '../../domain/validate.js';
import type { Worker } from '../../domain/worker.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { AppOptions } from '../app.js';

type Query = Record<string, string | string[] | undefined>;

const unchanged = (field: string) => field;

/**
 * One 400 for the body's faults (wire fields) and the rest's range problems (domain fields, `partial` validated),
 * leaving out those of a field the body already has at fault.
 */
function allProblems(faults: ValidationIssue[], rest: ValidationIssue[] = []): ApiError {
  const faulty = faults.map((issue) => issue.field);
  const atFault = (field: string) => faulty.some((f) => field === f || field.startsWith(`${f}.`));
  const more = rest
    .map((issue) => ({ ...issue, field: wireField(issue.field) }))
    .filter((issue) => !atFault(issue.field));
  return validationError([...faults, ...more], unchanged);
}

export function registerEndpointRoutes(api: FastifyInstance, o: AppOptions): void {
  const inputDefaults = () => ({ localVolumeSizeGB: o.catalog.limits().localVolumeSizeGB.free });
  const links = (endpoint: Endpoint, workers: Worker[], request: FastifyRequest) => ({
    url: o.links.url(endpoint.spec.appName),
    // The gateway on the name the client reached the API by, as GET /openapi.json names it.
    jobUrls: o.links.jobUrls(endpoint.id, request.hostname),
    log: o.links.log(endpoint.id),
    metrics: o.links.metrics(endpoint.id),
    workers: workers.map((w) =>
      toWireWorker(w, {
        log: o.links.workerLog(endpoint.id, w.id),
        metrics: o.links.workerMetrics(endpoint.id, w.id),
      }),
    ),
  });

  api.get('/endpoints', async (request) => {
    const page = readPage(request.query as Query);
    // Both reads at once: the workers query selects the same page by itself.
    const [{ endpoints, total }, workers] = await Promise.all([
      o.endpoints.list(request.principal, page),
      o.workers.listForEndpointPage(request.principal.ownerId, page),
    ]);
    return {
      endpoints: endpoints.map((e) =>
        toWireEndpoint(e, links(e, workers.get(e.id) ?? [], request), 'string'),
      ),
      total,
    };
  });

  api.get('/endpoint', async (request) => {
    const id = readQueryId(request.query as Query, ENDPOINT_ID_KEYS);
    const endpoint = await o.endpoints.get(request.principal, id);
    const workers = await o.workers.listByEndpoint(endpoint.id);
    return { endpoint: toWireEndpoint(endpoint, links(endpoint, workers, request), 'integer') };
  });

  // A spec has its own, smaller limit: Fastify refuses a larger declared body before reading or parsing it. And
  // one owner's writes take turns (api/owner-write-gate.ts), waiting before their body is read.
  const gate = o.writeGate;
  const spec = {
    ...(o.specBodyLimitBytes === undefined ? {} : { bodyLimit: o.specBodyLimitBytes }),
    ...(gate && {
      preParsing: async (request: FastifyRequest, reply: FastifyReply, payload: RequestPayload) => {
        const leave = await gate.enter(request.principal.ownerId);
        if (!leave) {
          throw new ApiError('RATE_LIMITED', 'too many of your creates and updates wait; retry in 1 s', {
            retryAfterSeconds: 1,
          });
        }
        reply.raw.once('close', leave);
        if (reply.raw.closed || request.raw.socket?.destroyed) leave();
        return payload;
      },
    }),
  };

  api.post('/endpoint/create', spec, async (request) => {
    const parsed = parseCreateBody(request.body, inputDefaults());
    if (!parsed.ok) {
      const more = parsed.partial && (await o.endpoints.problems(request.principal, parsed.partial));
      throw allProblems(parsed.issues, more);
    }
    const endpoint = await o.endpoints.create(request.principal, parsed.value);
    request.log.info({ endpointId: endpoint.id, ownerId: endpoint.ownerId }, 'endpoint created');
    return { id: endpoint.id };
  });

  api.post('/endpoint/update', spec, async (request) => {
    const parsed = parseUpdateBody(request.body, inputDefaults());
    if (!parsed.ok) {
      const { partial } = parsed;
      const more = partial && (await o.endpoints.problems(request.principal, partial.patch, partial.id));
      throw allProblems(parsed.issues, more);
    }
    const endpoint = await o.endpoints.update(request.principal, parsed.value.id, parsed.value.patch);
    request.log.info({ endpointId: endpoint.id, revision: endpoint.revision }, 'endpoint updated');
    const workers = await o.workers.listByEndpoint(endpoint.id);
    return { endpoint: toWireEndpoint(endpoint, links(endpoint, workers, request), 'integer') };
  });

  const lifecycle = {
    delete: (principal: Parameters<typeof o.endpoints.delete>[0], id: string) =>
      o.endpoints.delete(principal, id),
    stop: (principal: Parameters<typeof o.endpoints.stop>[0], id: string) => o.endpoints.stop(principal, id),
    start: (principal: Parameters<typeof o.endpoints.start>[0], id: string) =>
      o.endpoints.start(principal, id),
  };
  for (const [action, run] of Object.entries(lifecycle)) {
    api.post(`/endpoint/${action}`, async (request) => {
      const id = readId(request.body, ENDPOINT_ID_BODY_KEYS);
      if (id === undefined) {
        throw new ApiError('INVALID_FIELD', `the body needs the endpoint's id: {"id": "..."}`, {
          field: 'id',
        });
      }
      await run(request.principal, id);
      request.log.info({ endpointId: id, action }, 'endpoint lifecycle changed');
      return {};
    });
  }

  api.get('/endpoint/log', async (request) => {
    const query = request.query as Query;
    const id = readQueryId(query, ENDPOINT_ID_KEYS);
    const endpoint = await o.endpoints.get(request.principal, id);
    const after = readInteger(query, 'after', 0, 0);
    const limit = Math.min(readInteger(query, 'limit', 100, 1), 1000);
    const events = await o.events.list(endpoint.id, { afterId: after, limit });
    return { events: events.map(toWireEvent), next: events.at(-1)?.id ?? after };
  });
}
