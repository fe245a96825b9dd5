/**
 * `secret/save|delete` and `GET secrets` (extensions): an owner's secrets for `{{ CORRAL_SECRET_name }}` in env
 * values. No answer and no log line holds a value.
 */
import type { FastifyInstance } from 'fastify';
import type { WireSecret } from '../../contract/wire.js';
import { ApiError } from '../../errors/api-catalogue.js';
import type { AppOptions } from '../app.js';

export function registerSecretRoutes(api: FastifyInstance, o: AppOptions): void {
  const secrets = o.ownerSecrets;
  if (!secrets) return;

  api.post('/secret/save', async (request) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    const saved = await secrets.save(request.principal, {
      name: text(body, 'name'),
      value: text(body, 'value'),
    });
    request.log.info({ secret: saved.name, replaced: saved.replaced }, 'secret saved');
    return saved;
  });

  api.get('/secrets', async (request) => {
    const records = await secrets.list(request.principal);
    const list: WireSecret[] = records.map((r) => ({
      name: r.name,
      createdAt: new Date(r.createdAt).toISOString(),
      updatedAt: new Date(r.updatedAt).toISOString(),
    }));
    return { secrets: list };
  });

  api.post('/secret/delete', async (request) => {
    const body = (request.body ?? {}) as Record<string, unknown>;
    await secrets.delete(request.principal, text(body, 'name'));
    return {};
  });
}

function text(body: Record<string, unknown>, field: string): string {
  const value = body[field];
  if (typeof value !== 'string') throw new ApiError('INVALID_FIELD', `${field} must be a string`, { field });
  return value;
}
