/**
 * The endpoint operations between the API and the store: validation against the catalogue, revisions, the desired
 * state on stop, start and delete, and the events and audit entries each change records. No HTTP here.
 */
import type { Endpoint, EndpointState, StateReport } from '../domain/endpoint.js';
import type { Limits } from '../domain/limits.js';
import type { ModelRef } from '../domain/models.js';
import { type EndpointUse, endpointUse } from '../domain/quota.js';
import type { Page } from '../domain/records.js';
import { revisedEndpoint } from '../domain/revision.js';
import { secretReferences } from '../domain/secret-refs.js';
import { applyPatch, createSpec, type SpecPatch } from '../domain/spec-patch.js';
import { type ValidationCatalog, type ValidationIssue, validateSpec } from '../domain/validate.js';
import { ApiError, type ApiErrorReason } from '../errors/api-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { AuditEntry } from '../store/audit.js';
import type { Admit, EndpointChange } from '../store/endpoints/endpoints.js';
import { StoreError } from '../store/errors.js';
import type { Store } from '../store/store.js';
import type { IdGenerator } from './ids.js';
import type { ModelAccess } from './model-access.js';
import type { Principal } from './principal.js';
import type { QuotaService } from './quota-service.js';

/** What exists on this server, read at validation time (products follow the GPU inventory). */
export interface ServerCatalog {
  limits(): Limits;
  productIds(): ReadonlySet<string>;
  networkStorages: ReadonlyMap<string, string>;
  /** Network storage id -> the owners who may mount it; a storage not in it is open to every owner. */
  storageOwners?: ReadonlyMap<string, readonly string[] | 'all'>;
  /** Why the runtime has no idle tiers (kubernetes); absent: keepFrozen and keepSuspended are accepted. */
  idleTiersOff?: string;
  /** Why queue endpoints' workers could not reach the worker-facing listener; absent: queue endpoints are accepted. */
  queueOff?: string;
}

/** The registry's verdict on an owner running an image (src/registry/image-access-guard.ts behind it in app/image-guard.ts). */
export type ImageAccessCheck = (request: {
  ownerId: string;
  authId: string;
  image: string;
  admin: boolean;
}) => Promise<{ allowed: true } | { allowed: false; cause: string; message: string }>;

export interface EndpointServiceOptions {
  store: Pick<Store, 'endpoints' | 'credentials' | 'secrets'>;
  catalog: ServerCatalog;
  clock: Clock;
  ids: IdGenerator;
  /** Turns validation issues (domain field names) into the error a client sees. */
  toValidationError: (issues: ValidationIssue[]) => ApiError;
  /** Per-owner quotas, checked on create and update before anything is written; absent: none. */
  quotas?: QuotaService;
  /** Told the endpoint after every change, so that the controller reconciles it at once, not at its next tick. */
  onChanged?: (endpointId: string) => void;
  /**
   * Whether the owner may run the image, asked at create and when an update changes the image or its authId
   * (docs/api.md, Private images); absent: every image is accepted here and only the pull decides.
   */
  imageAccess?: ImageAccessCheck;
  /**
   * The UTF-8 size of each of the owner's secrets named (those it has), for the bound on the resolved env
   * (domain/env-bounds.ts); absent: the bound is checked only at worker starts.
   */
  secretSizes?: (ownerId: string, names: readonly string[]) => Promise<ReadonlyMap<string, number>>;
  /**
   * Workers run as host processes (the local runtime): only admin keys may create or change endpoints, since a
   * command given by anyone else would run with Corral's own rights.
   */
  singleTenant?: boolean;
  /**
   * The hub's word on the spec's models with the owner's token (model-access.ts), asked at create and when an update
   * changes the models; absent: no model cache, and models are refused at create.
   */
  models?: Pick<ModelAccess, 'check'>;
}

const WAITING: StateReport<EndpointState> = { state: 'deploying', error: '', message: 'waiting for workers' };

/** The endpoint operations: validation, revisions, state on stop/start/delete, events and audit. */
export class EndpointService {
  readonly #o: EndpointServiceOptions;

  constructor(options: EndpointServiceOptions) {
    this.#o = options;
  }

  async create(principal: Principal, patch: SpecPatch): Promise<Endpoint> {
    this.#refuseOnSingleTenant(principal, 'create');
    const { store, catalog, clock, ids } = this.#o;
    const id = ids.endpoint();
    const spec = createSpec(id, catalog.limits(), patch);
    this.#validate(spec, await this.#catalogFor(principal, spec.image.authId, spec.env));
    await this.#checkImageAccess(principal, spec.image);
    await this.#checkModels(principal, spec.models, []);
    const now = clock();
    const endpoint: Endpoint = {
      id,
      ownerId: principal.ownerId,
      spec,
      revision: 1,
      desired: 'running',
      status: WAITING,
      createdAt: now,
      updatedAt: now,
    };
    const admission = await this.#admission(principal);
    await this.#translate(() =>
      store.endpoints.create(
        endpoint,
        [{ at: now, type: 'created', message: 'endpoint created', data: { revision: 1 } }],
        this.#audit(principal, 'endpoint.create', id, now),
        admission?.(undefined, endpointUse(spec.workers)),
      ),
    );
    this.#o.onChanged?.(id);
    return endpoint;
  }

  /** The owner's quota check for a write (none without quotas), its quota read before the write. */
  async #admission(
    principal: Principal,
  ): Promise<((before: EndpointUse | undefined, after: EndpointUse) => Admit) | undefined> {
    const { quotas } = this.#o;
    if (!quotas) return undefined;
    const { quota } = await quotas.quotaOf(principal.ownerId);
    return (before, after) => quotas.admitEndpoint(quota, before, after);
  }

  /**
   * Every problem of the spec that a create (no `id`) or an update of `id` with `patch` would write, writing
   * nothing: so that a body with fields of the wrong type also hears of the others' ranges in the same answer.
   * An endpoint that is not the owner's has none to say (the answer is the body's own problems).
   */
  async problems(principal: Principal, patch: SpecPatch, id?: string): Promise<ValidationIssue[]> {
    const limits = this.#o.catalog.limits();
    const current = id === undefined ? undefined : await this.#o.store.endpoints.get(principal.ownerId, id);
    if (id !== undefined && current === undefined) return [];
    const spec =
      current === undefined ? createSpec('checked', limits, patch) : applyPatch(current.spec, patch);
    return validateSpec(spec, limits, await this.#catalogFor(principal, spec.image.authId, spec.env));
  }

  async get(principal: Principal, id: string): Promise<Endpoint> {
    return this.#found(await this.#o.store.endpoints.get(principal.ownerId, id), id);
  }

  list(principal: Principal, page: Page): Promise<{ endpoints: Endpoint[]; total: number }> {
    return this.#o.store.endpoints.list(principal.ownerId, page);
  }

  async update(principal: Principal, id: string, patch: SpecPatch): Promise<Endpoint> {
    this.#refuseOnSingleTenant(principal, 'update');
    const current = await this.get(principal, id);
    const patched = applyPatch(current.spec, patch);
    const catalog = await this.#catalogFor(principal, patched.image.authId, patched.env);
    const image = patched.image;
    const imageChanged = image.ref !== current.spec.image.ref || image.authId !== current.spec.image.authId;
    const modelsChanged = JSON.stringify(patched.models) !== JSON.stringify(current.spec.models);
    // Validated first, so that a bad field is answered as such before the registry or the hub is asked.
    if (imageChanged || modelsChanged) this.#validate(patched, catalog);
    if (imageChanged) await this.#checkImageAccess(principal, image);
    if (modelsChanged) await this.#checkModels(principal, patched.models, current.spec.models);
    const admission = await this.#admission(principal);
    return this.#mutate(principal, id, 'endpoint.update', (endpoint, now) => {
      // Validated here, on the spec actually written, so that a concurrent update cannot slip past it.
      const next = applyPatch(endpoint.spec, patch);
      this.#validate(next, catalog);
      const revised = revisedEndpoint(endpoint, next, now);
      return {
        next: revised.next,
        ...(admission && { admit: admission(endpointUse(endpoint.spec.workers), endpointUse(next.workers)) }),
        events:
          revised.fields.length === 0
            ? []
            : [
                {
                  at: now,
                  type: 'updated',
                  message: `updated ${revised.fields.join(', ')}`,
                  data: { fields: revised.fields, revision: revised.next.revision },
                },
              ],
      };
    });
  }

  async stop(principal: Principal, id: string): Promise<Endpoint> {
    return this.#mutate(principal, id, 'endpoint.stop', (endpoint, now) => ({
      next: {
        ...endpoint,
        desired: 'stopped',
        status: { state: 'stopped', error: '', message: 'stopped by its owner' },
        updatedAt: now,
      },
      events:
        endpoint.desired === 'stopped' ? [] : [{ at: now, type: 'stopped', message: 'endpoint stopped' }],
    }));
  }

  async start(principal: Principal, id: string): Promise<Endpoint> {
    this.#refuseOnSingleTenant(principal, 'start');
    return this.#mutate(principal, id, 'endpoint.start', (endpoint, now) =>
      endpoint.desired === 'running'
        ? { next: endpoint, events: [] }
        : {
            next: { ...endpoint, desired: 'running', status: WAITING, updatedAt: now },
            events: [{ at: now, type: 'started', message: 'endpoint started' }],
          },
    );
  }

  async delete(principal: Principal, id: string): Promise<void> {
    await this.#mutate(principal, id, 'endpoint.delete', (endpoint, now) => ({
      next: {
        ...endpoint,
        desired: 'stopped',
        status: { state: 'deleting', error: '', message: 'draining and removing workers' },
        updatedAt: now,
      },
      events: [{ at: now, type: 'deleted', message: 'endpoint deleted' }],
      deleted: true,
    }));
  }

  async #mutate(
    principal: Principal,
    id: string,
    action: string,
    change: (endpoint: Endpoint, now: number) => EndpointChange,
  ): Promise<Endpoint> {
    const { store, clock } = this.#o;
    const now = clock();
    const result = await this.#translate(() =>
      store.endpoints.mutate(
        principal.ownerId,
        id,
        (endpoint) => change(endpoint, now),
        (applied) =>
          this.#audit(principal, action, id, now, applied.events[0] ? { event: applied.events[0].type } : {}),
      ),
    );
    this.#o.onChanged?.(id);
    return this.#found(result, id);
  }

  async #catalogFor(
    principal: Principal,
    authId: string,
    env: Endpoint['spec']['env'],
  ): Promise<ValidationCatalog> {
    const { catalog, store, secretSizes } = this.#o;
    const credentials = authId === '' ? undefined : await store.credentials.get(principal.ownerId, authId);
    const referenced = [...new Set(env.flatMap((e) => secretReferences(e.value)))];
    return {
      productIds: catalog.productIds(),
      networkStorages: catalog.networkStorages,
      forbiddenStorages: forbiddenStorages(catalog.storageOwners, principal.ownerId),
      credentialIds: new Set(credentials ? [credentials.id] : []),
      secretNames: await store.secrets.names(principal.ownerId),
      ...(secretSizes ? { secretBytes: await secretSizes(principal.ownerId, referenced) } : {}),
      ...(catalog.idleTiersOff === undefined ? {} : { idleTiersOff: catalog.idleTiersOff }),
      ...(catalog.queueOff === undefined ? {} : { queueOff: catalog.queueOff }),
    };
  }

  async #checkImageAccess(principal: Principal, image: Endpoint['spec']['image']): Promise<void> {
    const check = this.#o.imageAccess;
    if (!check) return;
    const verdict = await check({
      ownerId: principal.ownerId,
      authId: image.authId,
      image: image.ref,
      admin: principal.admin,
    });
    if (!verdict.allowed) {
      throw new ApiError('IMAGE_ACCESS_DENIED', verdict.message, {
        field: 'image.image',
        image: image.ref,
        cause: verdict.cause,
      });
    }
  }

  async #checkModels(principal: Principal, models: readonly ModelRef[], before: readonly ModelRef[]) {
    if (models.length === 0) return;
    const access = this.#o.models;
    if (!access) {
      throw new ApiError('INVALID_FIELD', 'this server has no model cache: endpoints cannot name models', {
        field: 'models',
      });
    }
    await access.check(principal.ownerId, models, before);
  }

  #refuseOnSingleTenant(principal: Principal, operation: string): void {
    if (!this.#o.singleTenant || principal.admin) return;
    throw new ApiError(
      'RUNTIME_SINGLE_TENANT',
      `this server runs workers as host processes (the local runtime); only an admin key may ${operation} endpoints`,
      { runtime: 'local' },
    );
  }

  #validate(spec: Endpoint['spec'], catalog: ValidationCatalog): void {
    const issues = validateSpec(spec, this.#o.catalog.limits(), catalog);
    if (issues.length > 0) throw this.#o.toValidationError(issues);
  }

  #audit(principal: Principal, action: string, targetId: string, at: number, detail = {}): AuditEntry {
    return { at, ownerId: principal.ownerId, actor: principal.keyId, action, targetId, detail };
  }

  #found(endpoint: Endpoint | undefined, id: string): Endpoint {
    if (!endpoint) throw new ApiError('ENDPOINT_NOT_FOUND', `no endpoint with id "${id}"`, { id });
    return endpoint;
  }

  async #translate<T>(operation: () => Promise<T>): Promise<T> {
    try {
      return await operation();
    } catch (error) {
      if (error instanceof StoreError) {
        const reason: ApiErrorReason = error.code;
        const field = { APP_NAME_TAKEN: 'appName', OPENAI_MODEL_TAKEN: 'openaiModel' }[reason as string];
        throw new ApiError(reason, error.message, field === undefined ? {} : { field });
      }
      throw error;
    }
  }
}

/** The network storages the owner may not mount. */
function forbiddenStorages(
  owners: ReadonlyMap<string, readonly string[] | 'all'> | undefined,
  ownerId: string,
): Set<string> {
  const forbidden = new Set<string>();
  for (const [id, allowed] of owners ?? []) {
    if (allowed !== 'all' && !allowed.includes(ownerId)) forbidden.add(id);
  }
  return forbidden;
}
