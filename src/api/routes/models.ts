/**
 * `GET models` (Corral's own, issue 34): the models in this machine's cache (docs/models.md), with their size, last
 * use and the endpoints that name them. An admin key sees every cached model and every owner's endpoints; any other
 * key sees only the models its own endpoints name (which models other owners cache is theirs to know).
 */
import type { FastifyInstance } from 'fastify';
import type { WireModels, WireModelUser } from '../../contract/models.js';
import type { ModelCache } from '../../ports/model-cache.js';

/** An endpoint that names a model: the wire's own shape. */
export type ModelUser = WireModelUser;

export interface ModelsReport {
  cache: Pick<ModelCache, 'list' | 'progress'>;
  /** Model name -> the endpoints naming it: one owner's, or (null) every owner's. */
  users(ownerId: string | null): Promise<ReadonlyMap<string, ModelUser[]>>;
}

export function registerModelRoutes(api: FastifyInstance, report: ModelsReport): void {
  api.get('/models', async (request): Promise<WireModels> => {
    const { admin, ownerId } = request.principal;
    const users = await report.users(admin ? null : ownerId);
    const cached = await report.cache.list();
    return {
      scope: admin ? 'all' : 'own',
      models: cached
        .filter((model) => admin || users.has(model.name))
        .map((model) => {
          const download = report.cache.progress(model);
          return {
            name: model.name,
            revision: model.revision,
            commit: model.commit,
            files: model.files,
            bytes: model.bytes,
            diskBytes: model.diskBytes,
            lastUsedAt: new Date(model.lastUsedAt).toISOString(),
            endpoints: (users.get(model.name) ?? []).map((user) => ({ ...user })),
            download: download && {
              bytesDone: download.bytesDone,
              bytesTotal: download.bytesTotal,
              bytesPerSecond: download.bytesPerSecond,
            },
          };
        }),
    };
  });
}
