/** API key management over the store: create, list, revoke, and the operator's or first key at start-up. */
import { apiKeyId, apiKeyMatches, generateApiKey, hashApiKey } from '../crypto/api-keys.js';
import type { ApiKeyRecord } from '../domain/records.js';
import type { Clock } from '../ports/clock.js';
import type { Store } from '../store/store.js';

export const DEFAULT_OWNER = 'default';
export const MIN_OPERATOR_KEY_LENGTH = 16;

/** Creates, lists and revokes API keys on the store (the `corral keys` commands, start-up and the key routes). */
export class ApiKeyService {
  readonly #o: { store: Pick<Store, 'apiKeys' | 'audit'>; clock: Clock };

  constructor(options: { store: Pick<Store, 'apiKeys' | 'audit'>; clock: Clock }) {
    this.#o = options;
  }

  /**
   * Returns the new key: the only time it exists outside the caller's hands is this return value. `actor`: the
   * key that asked, in the audit log (absent: `cli`, the `corral keys` command on the store).
   */
  async create(options: {
    ownerId: string;
    name: string;
    admin: boolean;
    actor?: string;
  }): Promise<{ id: string; key: string }> {
    const { actor, ...fields } = options;
    const { id, key, secretHash } = generateApiKey();
    await this.#o.store.apiKeys.insert({ id, secretHash, createdAt: this.#o.clock(), ...fields });
    await this.#audit(options.ownerId, 'key.create', id, actor);
    return { id, key };
  }

  find(id: string): Promise<ApiKeyRecord | undefined> {
    return this.#o.store.apiKeys.findById(id);
  }

  list(ownerId?: string): Promise<ApiKeyRecord[]> {
    return this.#o.store.apiKeys.list(ownerId);
  }

  /** False when there is no such active key; `actor` as for `create`. */
  async revoke(id: string, actor?: string): Promise<boolean> {
    const record = await this.#o.store.apiKeys.findById(id);
    if (!record || !(await this.#o.store.apiKeys.revoke(id, this.#o.clock()))) return false;
    await this.#audit(record.ownerId, 'key.revoke', id, actor);
    return true;
  }

  /**
   * Makes the operator's CORRAL_API_KEY a valid admin key of the default owner. A key that was revoked
   * stays revoked: revocation wins over the environment.
   */
  async ensureOperatorKey(key: string): Promise<'created' | 'present' | 'revoked'> {
    if (key.length < MIN_OPERATOR_KEY_LENGTH) {
      throw new Error(`CORRAL_API_KEY must be at least ${MIN_OPERATOR_KEY_LENGTH} characters`);
    }
    const id = apiKeyId(key);
    const stored = async () => {
      const existing = await this.#o.store.apiKeys.findById(id);
      if (!existing) return undefined;
      if (!apiKeyMatches(key, existing.secretHash))
        throw new Error('CORRAL_API_KEY collides with another key id');
      return existing.revokedAt === null ? 'present' : 'revoked';
    };
    const found = await stored();
    if (found) return found;
    // Replicas starting together on a new database all get here: one stores the key, the others find it stored.
    const inserted = await this.#o.store.apiKeys.insertIfAbsent({
      id,
      ownerId: DEFAULT_OWNER,
      name: 'CORRAL_API_KEY',
      secretHash: hashApiKey(key),
      admin: true,
      createdAt: this.#o.clock(),
    });
    if (!inserted) {
      const after = await stored();
      if (after) return after;
      throw new Error('CORRAL_API_KEY could not be stored');
    }
    await this.#audit(DEFAULT_OWNER, 'key.create', id);
    return 'created';
  }

  /** On a server with no active key, creates an admin key for the default owner and returns it. */
  async ensureFirstKey(): Promise<{ id: string; key: string } | undefined> {
    if ((await this.#o.store.apiKeys.countActive()) > 0) return undefined;
    return this.create({ ownerId: DEFAULT_OWNER, name: 'first key', admin: true });
  }

  #audit(ownerId: string, action: string, targetId: string, actor = 'cli'): Promise<void> {
    return this.#o.store.audit.record({ at: this.#o.clock(), ownerId, actor, action, targetId });
  }
}
