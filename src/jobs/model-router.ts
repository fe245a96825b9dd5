/**
 * The model router (issue 35): OpenAI's API on the gateway without an endpoint in the path, `/openai/v1/...`. The
 * caller's key names the owner (the job routes' key rules: JobService.modelEndpoints), the body's `model` names
 * the owner's endpoint whose `openaiModel` it is (domain/openai-model.ts), and the request is then served exactly as
 * `/v2/{that endpoint}/openai/v1/...` is: rerouted through the gateway's router onto that path (a queue endpoint's
 * job, openai-routes.ts; an http endpoint's workers, gateway/openai-passthrough.ts). `GET /openai/v1/models` lists
 * the models; an unknown or missing model is a 404 in OpenAI's shape naming those there are. A `GatewayRoute`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { openAIModel, openAIModelList, openAIRequestModel } from '../contract/openai.js';
import { safeDecode } from '../contract/paths.js';
import type { Endpoint } from '../domain/endpoint.js';
import { JOB_LIMITS } from '../domain/job.js';
import { chooseModelEndpoint, unknownModelMessage } from '../domain/openai-model.js';
import { JobError } from '../errors/jobs-catalogue.js';
import {
  asJobError,
  type JobsLogger,
  onEndpointHost,
  readBodyBytes,
  replayRequest,
  writeJson,
} from './http-io.js';
import type { JobService } from './job-service.js';
import { writeOpenAIError } from './openai-routes.js';

/** The router's paths: `/openai`, then the route OpenAI's clients call (`/v1/chat/completions`). */
const OPENAI = /^\/openai(?=[/?]|$)/;
/** `GET /v1/models` and `GET /v1/models/{model}` (the name URL-encoded: it may hold a slash). */
const MODELS = /^\/v1\/models(?:\/(.+))?$/;

export interface ModelRouterOptions {
  service: Pick<JobService, 'modelEndpoints'>;
  /** The gateway's domain: `{appName}.{domain}` Hosts are endpoints' own and never claimed. */
  domain: string;
  logger: JobsLogger;
}

/** A model an endpoint serves, for OpenAI's list. */
type Served = { id: string; openaiModel: string; endpoint: Endpoint };

export class ModelRouter {
  readonly #o: ModelRouterOptions;

  constructor(options: ModelRouterOptions) {
    this.#o = options;
  }

  readonly claims = (req: IncomingMessage): boolean =>
    OPENAI.test(req.url ?? '') && !onEndpointHost(req, this.#o.domain);

  readonly handleRequest = (
    req: IncomingMessage,
    res: ServerResponse,
    reroute: (req: IncomingMessage, res: ServerResponse) => void,
  ): void => {
    this.#serve(req, res, reroute).catch((error: unknown) =>
      writeOpenAIError(res, asJobError(error, this.#o.logger)),
    );
  };

  async #serve(
    req: IncomingMessage,
    res: ServerResponse,
    reroute: (req: IncomingMessage, res: ServerResponse) => void,
  ): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://router');
    const route = url.pathname.replace(OPENAI, '');
    const method = req.method ?? 'GET';
    const models = MODELS.exec(route);
    if (method === 'GET' && models !== null) {
      const served = await this.#served(req);
      const named = models[1];
      if (named === undefined) {
        writeJson(res, 200, openAIModelList(served.map(entry)));
        return;
      }
      const model = safeDecode(named);
      const choice = chooseModelEndpoint(model, served);
      if (choice.kind === 'unknown')
        throw new JobError('MODEL_NOT_FOUND', unknownModelMessage(model, choice));
      writeJson(res, 200, openAIModel(entry(choice.endpoint)));
      return;
    }
    if (method !== 'POST' || !route.startsWith('/v1/'))
      throw new JobError(
        'INVALID_JOB_REQUEST',
        `no route ${method} /openai${route}: the model router takes POST /openai/v1/... (the body's model picks the endpoint) and GET /openai/v1/models; any other goes to /v2/{endpoint}/openai/v1/...`,
      );
    // The key first, as on every job route: a refused call reads no body.
    const served = await this.#served(req);
    const body = await readBodyBytes(req, JOB_LIMITS.runsyncBodyBytes, 'an OpenAI request body');
    const model = openAIRequestModel(body.toString('utf8'));
    if (!model.ok) throw new JobError('INVALID_JOB_REQUEST', model.problem);
    const choice = chooseModelEndpoint(model.value, served);
    if (choice.kind === 'unknown')
      throw new JobError('MODEL_NOT_FOUND', unknownModelMessage(model.value, choice));
    // The id, never a name: exactly the endpoint chosen, whichever of the routes behind serves it.
    reroute(replayRequest(req, `/v2/${choice.endpoint.id}/openai${route}${url.search}`, body), res);
  }

  /** The models the caller's key may call, each with its endpoint (401 in OpenAI's shape for a refused key). */
  async #served(req: IncomingMessage): Promise<Served[]> {
    const authorization = req.headers.authorization;
    const endpoints = await this.#o.service.modelEndpoints(authorization);
    // By name in code points, the same on either database (PostgreSQL's collation may order otherwise).
    return endpoints
      .flatMap((endpoint) =>
        endpoint.spec.openaiModel === undefined
          ? []
          : [{ id: endpoint.id, openaiModel: endpoint.spec.openaiModel, endpoint }],
      )
      .sort((a, b) => (a.openaiModel < b.openaiModel ? -1 : a.openaiModel > b.openaiModel ? 1 : 0));
  }
}

/** A served model as OpenAI lists it: `owned_by` names the endpoint that serves it (its appName). */
function entry(served: Served) {
  return {
    id: served.openaiModel,
    created: Math.floor(served.endpoint.createdAt / 1000),
    ownedBy: served.endpoint.spec.appName,
  };
}
