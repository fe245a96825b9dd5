/** API authentication: a bearer key checked against its stored hash, and whom an admin key may act for. */
import { apiKeyId, apiKeyMatches } from '../crypto/api-keys.js';
import { looksLikeInvokeKey } from '../crypto/invoke-keys.js';
import { ApiError } from '../errors/api-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { Principal } from '../service/principal.js';
import type { Store } from '../store/store.js';

const TOUCH_INTERVAL_MS = 60_000;

/** Turns an Authorization header into the caller, or throws UNAUTHENTICATED. Keys never reach a log. */
export class Authenticator {
  readonly #o: { store: Pick<Store, 'apiKeys'>; clock: Clock };

  constructor(options: { store: Pick<Store, 'apiKeys'>; clock: Clock }) {
    this.#o = options;
  }

  /**
   * Accepts `Bearer <key>` (and a bare key, which some clients send). An admin key may act for another
   * owner by sending `X-Corral-Owner`.
   */
  async authenticate(authorization: string | undefined, actAs: string | undefined): Promise<Principal> {
    const key = authorization?.replace(/^Bearer\s+/i, '').trim();
    if (!key) throw unauthenticated('missing Authorization header; send "Authorization: Bearer <API key>"');
    if (looksLikeInvokeKey(key)) {
      throw unauthenticated("an invoke key calls its endpoint's URL only, not the API; use an API key");
    }
    const id = apiKeyId(key);
    const record = await this.#o.store.apiKeys.findById(id);
    if (!record || !apiKeyMatches(key, record.secretHash)) throw unauthenticated('invalid API key');
    if (record.revokedAt !== null) throw unauthenticated('this API key has been revoked');
    const now = this.#o.clock();
    if (record.lastUsedAt === null || now - record.lastUsedAt > TOUCH_INTERVAL_MS) {
      await this.#o.store.apiKeys.touch(record.id, now);
    }
    if (actAs !== undefined && actAs !== record.ownerId) {
      if (!record.admin) throw unauthenticated('X-Corral-Owner needs an admin key');
      return { ownerId: actAs, keyId: record.id, admin: true };
    }
    return { ownerId: record.ownerId, keyId: record.id, admin: record.admin };
  }
}

function unauthenticated(message: string): ApiError {
  return new ApiError('UNAUTHENTICATED', message);
}
