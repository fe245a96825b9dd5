/**
 * `GET models`, `POST models` and `DELETE models/{org}/{name}` (Corral's own, issue 34): the models in this
 * machine's cache and in the workers' machines' own (the GPU nodes', on Kubernetes with node agents; docs/models.md),
 * each entry naming its machine, with their size, last use and the endpoints that name them; a pull with the
 * caller's token (into every machine's cache); a removal (from every machine). An admin key sees every cached model and every owner's endpoints; any other key sees
 * only the models its own endpoints name or it pulled (which models other owners cache is theirs to know). Only an
 * admin key removes a model: the cache is shared between owners (docs/security.md).
 */
import type { FastifyInstance } from 'fastify';
import { parseModelBody } from '../../contract/endpoint-input.js';
import { validationError } from '../../contract/errors.js';
import type { WireCachedModel, WireModels, WireModelUser } from '../../contract/models.js';
import type { CachedModel, MachineModelCaches, ModelCache, ModelProgress } from '../../ports/model-cache.js';
import type { ModelPulls } from '../../service/model-pulls.js';
import { requireAdmin } from '../../service/principal.js';

/** An endpoint that names a model: the wire's own shape. */
export type ModelUser = WireModelUser;

export interface ModelsReport {
  cache: Pick<ModelCache, 'list' | 'progress'>;
  /** The workers' machines' own caches, where the runtime keeps them (the GPU nodes'): listed, pulled into, removed from. */
  machines?: Pick<MachineModelCaches, 'listMachines' | 'ensure' | 'removeEverywhere'> | undefined;
  /** Model name -> the endpoints naming it: one owner's, or (null) every owner's. */
  users(ownerId: string | null): Promise<ReadonlyMap<string, ModelUser[]>>;
  /** Pulls and removals; absent: `GET models` only. */
  pulls?: ModelPulls;
}

function wireModel(
  model: CachedModel,
  download: ModelProgress | null,
  users: ReadonlyMap<string, ModelUser[]>,
  machine: string | null = null,
): WireCachedModel {
  return {
    name: model.name,
    machine,
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
}

export function registerModelRoutes(api: FastifyInstance, report: ModelsReport): void {
  api.get('/models', async (request): Promise<WireModels> => {
    const { admin, ownerId } = request.principal;
    const users = await report.users(admin ? null : ownerId);
    const visible = (model: CachedModel) =>
      admin || users.has(model.name) || report.pulls?.pulledBy(ownerId, model.name) === true;
    const [cached, onMachines] = await Promise.all([
      report.cache.list(),
      report.machines?.listMachines() ?? Promise.resolve([]),
    ]);
    return {
      scope: admin ? 'all' : 'own',
      models: [
        ...cached.filter(visible).map((model) => wireModel(model, report.cache.progress(model), users)),
        ...onMachines.filter(visible).map((model) => wireModel(model, model.download, users, model.machine)),
      ],
    };
  });

  const pulls = report.pulls;
  if (!pulls) return;

  api.post('/models', async (request, reply): Promise<WireCachedModel> => {
    const parsed = parseModelBody(request.body);
    if (!parsed.ok) throw validationError(parsed.issues, (field) => field);
    const { admin, ownerId } = request.principal;
    const pulled = await pulls.pull(ownerId, parsed.value);
    request.log.info(
      { model: parsed.value.name, revision: parsed.value.revision, started: pulled.started },
      pulled.started ? 'model pull started' : 'model pull found the model cached',
    );
    reply.code(pulled.started ? 202 : 200);
    return wireModel(pulled.model, pulled.download, await report.users(admin ? null : ownerId));
  });

  api.delete<{ Params: { org: string; name: string }; Querystring: { revision?: unknown } }>(
    '/models/:org/:name',
    async (request, reply) => {
      requireAdmin(request.principal, 'DELETE models');
      const { revision } = request.query;
      const name = `${request.params.org}/${request.params.name}`;
      await pulls.remove(name, typeof revision === 'string' ? revision : undefined);
      reply.code(204);
    },
  );
}
