/**
 * The OpenAI routes in the OpenAPI document (docs/openai.md), served by the gateway like the jobs API: RunPod's
 * `/v2/{endpoint}/openai/v1/...` (a job on a queue endpoint, passed to the workers on an http one) and the model
 * router `/openai/v1/...` (the body's `model` picks the endpoint). Their bodies and answers are OpenAI's own, passed
 * through as the model server gives them; failures are in OpenAI's error shape, with the jobs catalogue's code.
 * src/api/openapi.test.ts checks the paths against the routes' own matchers.
 */
import { JOB_LIMITS } from '../../domain/job.js';
import { JOBS_ERROR_CATALOGUE, type JobErrorCode } from '../../errors/jobs-catalogue.js';
import { object, ref, type Schema, str } from './schema.js';

const MB = 1024 * 1024;

/** What the OpenAI routes answer besides 200, by status: the refusals of the job routes and the job's own end. */
const OPENAI_ERRORS: JobErrorCode[] = [
  'INVALID_JOB_REQUEST',
  'UNAUTHENTICATED',
  'ENDPOINT_NOT_FOUND',
  'MODEL_NOT_FOUND',
  'BODY_TOO_LARGE',
  'RATE_LIMITED',
  'JOB_FAILED',
  'JOB_TIMED_OUT',
  'JOB_CANCELLED',
  'JOBS_UNAVAILABLE',
];

const routeParameter: Schema = {
  name: 'route',
  in: 'path',
  required: true,
  description:
    'The OpenAI route after /v1/: chat/completions, completions, embeddings, models, responses, ... (passed to the worker as `openai_route`, `/v1/{route}`).',
  schema: { type: 'string' },
};

const endpointParameter: Schema = {
  name: 'endpoint',
  in: 'path',
  required: true,
  description: "The endpoint's id, its appName, or its name where no other endpoint the key may call has it.",
  schema: { type: 'string' },
};

function errorResponses(): Record<string, Schema> {
  const byStatus = new Map<number, JobErrorCode[]>();
  for (const code of OPENAI_ERRORS) {
    const { status } = JOBS_ERROR_CATALOGUE[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  return Object.fromEntries(
    [...byStatus.entries()]
      .sort(([a], [b]) => a - b)
      .map(([status, codes]) => [
        String(status),
        {
          description: `${codes.map((c) => `\`${c}\`: ${JOBS_ERROR_CATALOGUE[c].description}`).join('\n\n')}${status === 400 ? '\n\nA model server that refused the request (a 4xx of vLLM) is answered with its own status and type.' : ''}`,
          content: { 'application/json': { schema: ref('OpenAIError') } },
        },
      ]),
  );
}

const answers = (): Record<string, Schema> => ({
  '200': {
    description:
      'The model server\'s answer as it gave it: one JSON object, or with `"stream": true` its server-sent events, passed through chunk by chunk as the handler yields them (ending with its own `data: [DONE]`).',
    content: {
      'application/json': { schema: { type: 'object', additionalProperties: true } },
      'text/event-stream': { schema: { type: 'string' } },
    },
  },
  ...errorResponses(),
});

const operation = (operationId: string, summary: string, description: string, withBody: boolean): Schema => ({
  operationId,
  summary,
  description: `${description} See docs/openai.md.`,
  tags: ['OpenAI'],
  security: [{ bearerAuth: [] }],
  ...(withBody
    ? {
        requestBody: {
          required: true,
          description: `OpenAI's request body (at most ${JOB_LIMITS.runsyncBodyBytes / MB} MB), passed through as \`openai_input\`.`,
          content: { 'application/json': { schema: ref('OpenAIRequest') } },
        },
      }
    : {}),
  responses: answers(),
});

/** The OpenAI routes' paths, each with the gateway's address as its server (`gatewayUrl`). */
export function openAIPaths(gatewayUrl: string): Record<string, Record<string, Schema | Schema[]>> {
  const servers = [
    {
      url: gatewayUrl,
      description: "The gateway's address (OpenAI clients take it as their base URL), not the API's.",
    },
  ];
  const queueOrPassed =
    'On a queue endpoint the request is a job whose input is `{"openai_route", "openai_input"}` (RunPod\'s shape), answered with what its handler yields; a client that goes away cancels it. On an http endpoint it is passed to a worker as `/v1/{route}`.';
  return {
    '/v2/{endpoint}/openai/v1/{route}': {
      servers,
      parameters: [endpointParameter, routeParameter],
      get: operation('openAIGet', "An OpenAI GET route of the endpoint's model server", queueOrPassed, false),
      post: operation('openAIPost', "An OpenAI route of the endpoint's model server", queueOrPassed, true),
    },
    '/openai/v1/{route}': {
      servers,
      parameters: [routeParameter],
      post: operation(
        'openAIRouted',
        'An OpenAI route, to the endpoint whose openaiModel is the body\'s "model" (the model router)',
        "The caller's key names the owner; the body's `model` picks that owner's endpoint (its `openaiModel`), and the request is served as `/v2/{endpoint}/openai/v1/{route}` is. An unknown model is 404 MODEL_NOT_FOUND, naming the models there are.",
        true,
      ),
    },
    '/openai/v1/models': {
      servers,
      get: {
        operationId: 'openAIModels',
        summary: "The caller's models (the model router)",
        description:
          "OpenAI's model list: one entry per endpoint of the key's owner with an `openaiModel`. See docs/openai.md.",
        tags: ['OpenAI'],
        security: [{ bearerAuth: [] }],
        responses: {
          '200': {
            description: 'The models.',
            content: { 'application/json': { schema: ref('OpenAIModelList') } },
          },
          ...errorResponses(),
        },
      },
    },
  };
}

/** The OpenAI routes' component schemas. */
export function openAISchemas(): Record<string, Schema> {
  return {
    OpenAIRequest: {
      ...object(
        {
          model: str('The model (the model router picks the endpoint by it).'),
          stream: {
            type: 'boolean',
            description: 'Answer as server-sent events, as the handler yields them.',
          },
        },
        { optional: ['model', 'stream'], description: "OpenAI's request body, whatever its route takes." },
      ),
      additionalProperties: true,
    },
    OpenAIError: object(
      {
        error: object(
          {
            message: str('What went wrong (a failed job: the message its handler raised).'),
            type: str("OpenAI's error type (invalid_request_error, not_found_error, ...)."),
            code: { type: ['string', 'null'], description: "Corral's error code (the jobs catalogue's)." },
          },
          { required: ['message', 'type', 'code'] },
        ),
      },
      { required: ['error'], description: "OpenAI's error shape." },
    ),
    OpenAIModelList: object(
      {
        object: { const: 'list' },
        data: {
          type: 'array',
          items: object({
            id: str('The model, as the endpoint names it in openaiModel.'),
            object: { const: 'model' },
            created: { type: 'integer' },
            owned_by: str('The owner.'),
          }),
        },
      },
      { required: ['object', 'data'] },
    ),
  };
}
