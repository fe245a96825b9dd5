/**
 * `GET apikeys`, `POST apikey/create|delete` (Corral's own, admin keys only): the server's API keys. No answer
 * holds a key's hash, and only the create answer holds the key itself; logs name key ids, never keys. Another key
 * gets 403 ADMIN_REQUIRED: it is a valid key (401 would tell the dashboard to sign out), only not an admin's.
 */
import type { FastifyInstance } from 'fastify';
import {
  parseCreateApiKey,
  parseDeleteApiKey,
  toWireApiKey,
  type WireNewApiKey,
} from '../../contract/api-keys.js';
import type { InvokeKeyBody } from '../../contract/invoke-keys.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { ApiKeyService } from '../../service/api-key-service.js';
import { requireAdmin } from '../../service/principal.js';

export function registerApiKeyRoutes(api: FastifyInstance, keys: ApiKeyService): void {
  api.get('/apikeys', async (request) => {
    requireAdmin(request.principal, 'GET apikeys');
    return { keys: (await keys.list()).map(toWireApiKey) };
  });

  api.post('/apikey/create', async (request): Promise<WireNewApiKey> => {
    requireAdmin(request.principal, 'POST apikey/create');
    const input = valid(parseCreateApiKey(request.body));
    const created = await keys.create({
      ownerId: input.ownerId ?? request.principal.ownerId,
      name: input.name,
      admin: input.admin,
      actor: request.principal.keyId,
    });
    const record = await keys.find(created.id);
    if (!record) throw new ApiError('INTERNAL', 'the new API key was not found after it was stored');
    request.log.info(
      { apiKeyId: created.id, ownerId: record.ownerId, admin: record.admin },
      'API key created',
    );
    return { ...toWireApiKey(record), key: created.key };
  });

  api.post('/apikey/delete', async (request) => {
    requireAdmin(request.principal, 'POST apikey/delete');
    const { id } = valid(parseDeleteApiKey(request.body));
    if (!(await keys.revoke(id, request.principal.keyId)))
      throw new ApiError('API_KEY_NOT_FOUND', `no active API key with id ${id}`, { id });
    request.log.info({ apiKeyId: id }, 'API key revoked');
    return {};
  });
}

function valid<T>(parsed: InvokeKeyBody<T>): T {
  if (!parsed.ok) throw new ApiError('INVALID_FIELD', parsed.message, { field: parsed.field });
  return parsed.value;
}
