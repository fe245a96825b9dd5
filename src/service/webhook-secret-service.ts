/**
 * Each endpoint's webhook signing secret (Standard Webhooks, `whsec_...`): made on first use, sealed at rest with
 * the server's secret key, read and rotated by the endpoint's owner (audited), and opened for the webhook outbox to
 * sign each delivery. A rotation takes effect for every attempt made after it.
 */
import type { SecretBox } from '../crypto/secret-box.js';
import { generateWebhookSecret } from '../crypto/webhook-signature.js';
import { ApiError } from '../errors/api-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { Store } from '../store/store.js';
import type { Principal } from './principal.js';

/** An endpoint's webhook secret as its owner reads it. */
export interface WebhookSecretInfo {
  endpointId: string;
  secret: string;
  /** When this secret was made (first use or the last rotation). */
  createdAt: number;
}

export interface WebhookSecretServiceOptions {
  store: Pick<Store, 'webhookSecrets' | 'endpoints' | 'audit'>;
  secrets: SecretBox;
  clock: Clock;
}

export class WebhookSecretService {
  readonly #o: WebhookSecretServiceOptions;

  constructor(options: WebhookSecretServiceOptions) {
    this.#o = options;
  }

  /** The caller's endpoint's secret, made now when it has none. */
  async read(principal: Principal, endpointId: string): Promise<WebhookSecretInfo> {
    const endpoint = await this.#ownEndpoint(principal, endpointId);
    return this.#current(endpoint, principal.ownerId);
  }

  /** Replaces the caller's endpoint's secret with a new one and answers it. */
  async rotate(principal: Principal, endpointId: string): Promise<WebhookSecretInfo> {
    const endpoint = await this.#ownEndpoint(principal, endpointId);
    const secret = generateWebhookSecret();
    const at = this.#o.clock();
    await this.#o.store.webhookSecrets.replace({
      endpointId: endpoint,
      ownerId: principal.ownerId,
      sealed: this.#o.secrets.seal(secret),
      createdAt: at,
    });
    await this.#o.store.audit.record({
      at,
      ownerId: principal.ownerId,
      actor: principal.keyId,
      action: 'webhook-secret.rotate',
      targetId: endpoint,
    });
    return { endpointId: endpoint, secret, createdAt: at };
  }

  /** The secret the outbox signs an endpoint's deliveries with (made now when it has none). */
  async secretOf(endpointId: string, ownerId: string): Promise<string> {
    return (await this.#current(endpointId, ownerId)).secret;
  }

  async #current(endpointId: string, ownerId: string): Promise<WebhookSecretInfo> {
    const { store, secrets, clock } = this.#o;
    const kept =
      (await store.webhookSecrets.get(endpointId)) ??
      (await store.webhookSecrets.getOrInsert({
        endpointId,
        ownerId,
        sealed: secrets.seal(generateWebhookSecret()),
        createdAt: clock(),
      }));
    return { endpointId, secret: secrets.open(kept.sealed), createdAt: kept.createdAt };
  }

  async #ownEndpoint(principal: Principal, endpointId: string): Promise<string> {
    const endpoint = await this.#o.store.endpoints.get(principal.ownerId, endpointId);
    if (!endpoint)
      throw new ApiError('ENDPOINT_NOT_FOUND', `no endpoint with id "${endpointId}"`, { id: endpointId });
    return endpoint.id;
  }
}
