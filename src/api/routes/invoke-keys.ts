/**
 * `POST endpoint/invoke-key/create|delete` and `GET endpoint/invoke-keys` (a Corral extension): the keys an owner
 * makes for one endpoint's URL. A new key is in the create answer only; no other answer holds a key.
 */
import type { FastifyInstance } from 'fastify';
import {
  type InvokeKeyBody,
  parseCreateInvokeKey,
  parseDeleteInvokeKey,
  toWireInvokeKey,
} from '../../contract/invoke-keys.js';
import { ENDPOINT_ID_KEYS } from '../../contract/paths.js';
import { readQueryId } from '../../contract/query.js';
import type { WireNewInvokeKey } from '../../contract/wire.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { AppOptions } from '../app.js';

export function registerInvokeKeyRoutes(api: FastifyInstance, o: AppOptions): void {
  api.post('/endpoint/invoke-key/create', async (request): Promise<WireNewInvokeKey> => {
    const { endpointId, name } = valid(parseCreateInvokeKey(request.body));
    const created = await o.invokeKeys.create(request.principal, endpointId, name);
    request.log.info({ endpointId, invokeKeyId: created.id }, 'invoke key created');
    return { ...toWireInvokeKey(created), key: created.key };
  });

  api.get('/endpoint/invoke-keys', async (request) => {
    const endpointId = readQueryId(request.query as Record<string, string | undefined>, ENDPOINT_ID_KEYS);
    const keys = await o.invokeKeys.list(request.principal, endpointId);
    return { keys: keys.map(toWireInvokeKey) };
  });

  api.post('/endpoint/invoke-key/delete', async (request) => {
    const { endpointId, keyId } = valid(parseDeleteInvokeKey(request.body));
    await o.invokeKeys.revoke(request.principal, endpointId, keyId);
    request.log.info({ endpointId, invokeKeyId: keyId }, 'invoke key revoked');
    return {};
  });
}

function valid<T>(parsed: InvokeKeyBody<T>): T {
  if (!parsed.ok) throw new ApiError('INVALID_FIELD', parsed.message, { field: parsed.field });
  return parsed.value;
}
