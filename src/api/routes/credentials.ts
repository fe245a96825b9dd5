/** `repository/auth/save|delete` and `GET repository/auths`: registry credentials; no answer holds a password. */
import type { FastifyInstance } from 'fastify';
import { readId } from '../../contract/endpoint-input.js';
import type { WireCredential } from '../../contract/wire.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { AppOptions } from '../app.js';

export function registerCredentialRoutes(api: FastifyInstance, o: AppOptions): void {
  api.post('/repository/auth/save', async (request) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const input = {
      name: requiredText(body, 'name'),
      username: requiredText(body, 'username'),
      password: requiredText(body, 'password'),
    };
    const id = await o.credentials.save(request.principal, input);
    request.log.info({ credentialsId: id }, 'registry credentials saved');
    return { id };
  });

  api.get('/repository/auths', async (request) => {
    const records = await o.credentials.list(request.principal);
    const auths: WireCredential[] = records.map((r) => ({
      id: r.id,
      name: r.name,
      username: r.username,
      createdAt: new Date(r.createdAt).toISOString(),
    }));
    return { auths };
  });

  api.post('/repository/auth/delete', async (request) => {
    const id = readId(request.body, ['id']);
    if (id === undefined)
      throw new ApiError('INVALID_FIELD', 'the body needs {"id": "..."}', { field: 'id' });
    await o.credentials.delete(request.principal, id);
    return {};
  });
}

function requiredText(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string' || value === '' || value.length > 4096) {
    throw new ApiError('INVALID_FIELD', `${field} must be a non-empty string`, { field });
  }
  return value;
}
