/**
 * Who may call an endpoint's URL: the owner's invoke keys (create, shown once; list; revoke), and `grant`, which
 * turns a key the gateway received into what it allows (an API key: its owner's endpoints, or all for an admin; an
 * invoke key: its one endpoint). Keys are stored as hashes only and never logged.
 */
import { apiKeyId, apiKeyMatches } from '../crypto/api-keys.js';
import {
  generateInvokeKey,
  invokeKeyId,
  invokeKeyMatches,
  looksLikeInvokeKey,
} from '../crypto/invoke-keys.js';
import type { InvokeKeyRecord } from '../domain/records.js';
import { ApiError } from '../errors/api-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { Store } from '../store/store.js';
import type { Principal } from './principal.js';
import type { QuotaService } from './quota-service.js';

/** What a key that passed its check allows at the gateway. */
export interface EndpointKeyGrant {
  /** The owner of the key (of the endpoint, for an invoke key). */
  ownerId: string;
  /** An admin API key: every owner's endpoints. */
  admin: boolean;
  /** An invoke key (or a job delivery's key): the one endpoint it calls. Absent for an API key. */
  endpointId?: string;
  /** A job delivery's key (delivery-keys.ts): the server's own, for its endpoint's URL alone. */
  delivery?: true;
}

/** An invoke key as its owner sees it listed: never the key itself. */
export type InvokeKeyInfo = Omit<InvokeKeyRecord, 'secretHash'>;

export interface InvokeKeyServiceOptions {
  store: Pick<Store, 'invokeKeys' | 'endpoints' | 'apiKeys' | 'audit'>;
  clock: Clock;
  /** Per-owner quotas (active keys over all the owner's endpoints), checked in a create's transaction; absent: none. */
  quotas?: QuotaService;
}

export class InvokeKeyService {
  readonly #o: InvokeKeyServiceOptions;

  constructor(options: InvokeKeyServiceOptions) {
    this.#o = options;
  }

  /** Makes a key for the caller's endpoint; the returned `key` is the only time it exists outside the caller. */
  async create(
    principal: Principal,
    endpointId: string,
    name: string,
  ): Promise<InvokeKeyInfo & { key: string }> {
    const endpoint = await this.#ownEndpoint(principal, endpointId);
    const { id, key, secretHash } = generateInvokeKey();
    const info: InvokeKeyInfo = {
      id,
      endpointId: endpoint,
      ownerId: principal.ownerId,
      name,
      createdAt: this.#o.clock(),
      revokedAt: null,
    };
    const admit = await this.#o.quotas?.admitCount(principal, 'invokeKeys');
    await this.#o.store.invokeKeys.insert({ ...info, secretHash }, admit);
    await this.#audit(principal, 'invoke-key.create', id, endpoint);
    return { ...info, key };
  }

  async list(principal: Principal, endpointId: string): Promise<InvokeKeyInfo[]> {
    const endpoint = await this.#ownEndpoint(principal, endpointId);
    const records = await this.#o.store.invokeKeys.listByEndpoint(endpoint);
    return records.map(({ secretHash: _hash, ...info }) => info);
  }

  /** Revokes one of the endpoint's keys; the gateway refuses it once its cache entry expires. */
  async revoke(principal: Principal, endpointId: string, keyId: string): Promise<void> {
    const endpoint = await this.#ownEndpoint(principal, endpointId);
    if (!(await this.#o.store.invokeKeys.revoke(endpoint, keyId, this.#o.clock()))) {
      throw new ApiError('INVOKE_KEY_NOT_FOUND', `endpoint ${endpoint} has no active invoke key ${keyId}`, {
        id: keyId,
      });
    }
    await this.#audit(principal, 'invoke-key.revoke', keyId, endpoint);
  }

  /** What `key` allows at the gateway; undefined for a key that is unknown, wrong or revoked. */
  async grant(key: string): Promise<EndpointKeyGrant | undefined> {
    if (looksLikeInvokeKey(key)) {
      const id = invokeKeyId(key);
      const record = id === undefined ? undefined : await this.#o.store.invokeKeys.findById(id);
      if (!record || record.revokedAt !== null || !invokeKeyMatches(key, record.secretHash)) return undefined;
      return { ownerId: record.ownerId, admin: false, endpointId: record.endpointId };
    }
    const record = await this.#o.store.apiKeys.findById(apiKeyId(key));
    if (!record || record.revokedAt !== null || !apiKeyMatches(key, record.secretHash)) return undefined;
    return { ownerId: record.ownerId, admin: record.admin };
  }

  /** The endpoint's id when it is the caller's; 404 otherwise, as for every other endpoint operation. */
  async #ownEndpoint(principal: Principal, endpointId: string): Promise<string> {
    const endpoint = await this.#o.store.endpoints.get(principal.ownerId, endpointId);
    if (!endpoint)
      throw new ApiError('ENDPOINT_NOT_FOUND', `no endpoint with id "${endpointId}"`, { id: endpointId });
    return endpoint.id;
  }

  #audit(principal: Principal, action: string, keyId: string, endpointId: string): Promise<void> {
    return this.#o.store.audit.record({
      at: this.#o.clock(),
      ownerId: principal.ownerId,
      actor: principal.keyId,
      action,
      targetId: keyId,
      detail: { endpointId },
    });
  }
}
