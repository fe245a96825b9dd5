/**
 * `GET endpoint/webhook-secret` and `POST endpoint/webhook-secret/rotate` (a Corral extension): the secret that
 * signs an endpoint's job webhooks, read and rotated by its owner. The secret is never logged.
 */
import type { FastifyInstance } from 'fastify';
import { ENDPOINT_ID_KEYS } from '../../contract/paths.js';
import { readQueryId } from '../../contract/query.js';
import {
  parseRotateWebhookSecret,
  toWireWebhookSecret,
  type WireWebhookSecret,
} from '../../contract/webhook-secrets.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { AppOptions } from '../app.js';

export function registerWebhookSecretRoutes(api: FastifyInstance, o: AppOptions): void {
  api.get('/endpoint/webhook-secret', async (request): Promise<WireWebhookSecret> => {
    const endpointId = readQueryId(request.query as Record<string, string | undefined>, ENDPOINT_ID_KEYS);
    return toWireWebhookSecret(await o.webhookSecrets.read(request.principal, endpointId));
  });

  api.post('/endpoint/webhook-secret/rotate', async (request): Promise<WireWebhookSecret> => {
    const endpointId = parseRotateWebhookSecret(request.body);
    if (endpointId === undefined)
      throw new ApiError('INVALID_FIELD', 'the body needs {"id": "<endpoint id>"}', { field: 'id' });
    const rotated = await o.webhookSecrets.rotate(request.principal, endpointId);
    request.log.info({ endpointId }, 'webhook secret rotated');
    return toWireWebhookSecret(rotated);
  });
}
