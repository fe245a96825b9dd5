/**
 * Registry credentials per owner: the password sealed at rest and revealed only to pull an image, never in an
 * answer; credentials an endpoint still uses cannot be deleted.
 */
import type { SecretBox } from '../crypto/secret-box.js';
import { ApiError } from '../errors/api-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { CredentialRecord } from '../store/keys/credentials.js';
import type { Store } from '../store/store.js';
import type { IdGenerator } from './ids.js';
import type { Principal } from './principal.js';
import type { QuotaService } from './quota-service.js';

export interface CredentialInput {
  name: string;
  username: string;
  password: string;
}

export interface CredentialServiceOptions {
  store: Pick<Store, 'credentials' | 'endpoints'>;
  secrets: SecretBox;
  clock: Clock;
  ids: IdGenerator;
  /** Per-owner quotas, checked in a save's transaction; absent: none. */
  quotas?: QuotaService;
}

/** Registry credentials for private images: the password is sealed at rest and never returned. */
export class CredentialService {
  readonly #o: CredentialServiceOptions;

  constructor(options: CredentialServiceOptions) {
    this.#o = options;
  }

  async save(principal: Principal, input: CredentialInput): Promise<string> {
    const { store, secrets, clock, ids } = this.#o;
    const admit = await this.#o.quotas?.admitCount(principal, 'credentials');
    const id = ids.credentials();
    const at = clock();
    await store.credentials.insert(
      {
        id,
        ownerId: principal.ownerId,
        name: input.name,
        username: input.username,
        encryptedSecret: secrets.seal(input.password),
        createdAt: at,
      },
      { at, ownerId: principal.ownerId, actor: principal.keyId, action: 'credentials.save', targetId: id },
      admit,
    );
    return id;
  }

  list(principal: Principal): Promise<Omit<CredentialRecord, 'encryptedSecret'>[]> {
    return this.#o.store.credentials.list(principal.ownerId);
  }

  async delete(principal: Principal, id: string): Promise<void> {
    const { store, clock } = this.#o;
    const users = await store.endpoints.idsUsingCredentials(principal.ownerId, id);
    if (users.length > 0) {
      throw new ApiError(
        'CREDENTIALS_IN_USE',
        `credentials "${id}" are used by ${users.length} endpoint(s)`,
        {
          endpoints: users,
        },
      );
    }
    const audit = {
      at: clock(),
      ownerId: principal.ownerId,
      actor: principal.keyId,
      action: 'credentials.delete',
      targetId: id,
    };
    if (!(await store.credentials.delete(principal.ownerId, id, audit))) {
      throw new ApiError('CREDENTIALS_NOT_FOUND', `no registry credentials with id "${id}"`, { id });
    }
  }

  /** The username and password for an image pull; only the runtime calls this. */
  async reveal(ownerId: string, id: string): Promise<{ username: string; password: string } | undefined> {
    const record = await this.#o.store.credentials.get(ownerId, id);
    return record && { username: record.username, password: this.#o.secrets.open(record.encryptedSecret) };
  }
}
