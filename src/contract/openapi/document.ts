/**
 * The OpenAPI 3.1 document of the whole API, served at GET /openapi.json. The request schemas are generated
 * from the zod schemas that parse requests; the rest is built from the same constants the code uses (error
 * catalogue, limit fields, defaults), and src/api/openapi.test.ts checks it against the routes the app serves.
 * The jobs API (jobs.ts) is served on the gateway's address: its paths name that address in their own `servers`.
 */
import { API_PREFIX } from '../paths.js';
import { jobPaths, jobSchemas } from './jobs.js';
import { openAIPaths, openAISchemas } from './openai.js';
import { paths } from './operations.js';
import { requestSchemas } from './requests.js';
import { responseSchemas } from './responses.js';

/**
 * `serverUrl`: the API's address; `gatewayUrl`: the gateway's, where the jobs API is served (default: the API's
 * host on port 8000, the gateway's default).
 */
export function openApiDocument(options: { serverUrl: string; gatewayUrl?: string }): object {
  const gatewayUrl =
    options.gatewayUrl ??
    `${new URL(options.serverUrl).protocol}//${new URL(options.serverUrl).hostname}:8000`;
  return {
    openapi: '3.1.0',
    info: {
      title: 'Corral API',
      version: 'v1',
      description: `Serverless GPU endpoints, wire-compatible with ${API_PREFIX}. Requests accept integers as numeric strings and workerConfig/policy/image/healthy as a one-element array; unknown keys are ignored. See docs/api.md.`,
      license: { name: 'Apache-2.0', identifier: 'Apache-2.0' },
    },
    servers: [{ url: options.serverUrl }],
    security: [{ bearerAuth: [] }],
    tags: [
      { name: 'Endpoints' },
      { name: 'Catalog', description: 'Limits and GPU products.' },
      { name: 'Registry credentials', description: 'Credentials for private images.' },
      {
        name: 'Invoke keys',
        description: "Keys that call one endpoint's URL and nothing else (Corral extension).",
      },
      {
        name: 'Webhooks',
        description:
          "The secret that signs an endpoint's job webhooks, Standard Webhooks (Corral extension).",
      },
      { name: 'Secrets', description: 'Values for {{ CORRAL_SECRET_name }} in env values; never returned.' },
      {
        name: 'GPUs',
        description: 'The GPU inventory, who holds each GPU, and the workers waiting for one.',
      },
      {
        name: 'Models',
        description: "The machine's cache of Hugging Face models that endpoints name (docs/models.md).",
      },
      { name: 'API keys', description: "The server's API keys (admin keys only); a key is shown once." },
      {
        name: 'Jobs',
        description:
          "RunPod's queue API, served on the gateway's address (each path's servers), not the API's: an API key or an invoke key of the endpoint, as Bearer or raw in Authorization (docs/jobs.md).",
      },
      {
        name: 'OpenAI',
        description:
          "OpenAI's API on the gateway's address, with the jobs API's keys: per endpoint (RunPod's route) or routed by the body's model (docs/openai.md).",
      },
      { name: 'System', description: 'Unauthenticated.' },
    ],
    paths: { ...paths(), ...jobPaths(gatewayUrl), ...openAIPaths(gatewayUrl) },
    components: {
      securitySchemes: {
        bearerAuth: {
          type: 'http',
          scheme: 'bearer',
          description:
            'Authorization: Bearer <API key>. The first key is printed when the server first starts.',
        },
      },
      parameters: {
        ActAsOwner: {
          name: 'X-Corral-Owner',
          in: 'header',
          required: false,
          description: 'With an admin key: act for this owner.',
          schema: { type: 'string' },
        },
      },
      schemas: { ...responseSchemas(), ...requestSchemas(), ...jobSchemas(), ...openAISchemas() },
    },
  };
}
