/**
 * Owners' secrets: values sealed at rest with the server's key (as registry passwords are), never in an answer or a
 * log, opened only to start a worker whose env references them (`{{ CORRAL_SECRET_name }}`). A secret an endpoint
 * still references cannot be deleted.
 */
import type { SecretBox } from '../crypto/secret-box.js';
import { envBoundProblem, ResolvedEnvTooLargeError, resolvedEnvSize } from '../domain/env-bounds.js';
import {
  MAX_SECRET_VALUE_LENGTH,
  resolveSecretReferences,
  SECRET_NAME,
  secretReferences,
} from '../domain/secret-refs.js';
import { ApiError } from '../errors/api-catalogue.js';
import type { Clock } from '../ports/clock.js';
import type { SecretSummary } from '../store/keys/secrets.js';
import type { Store } from '../store/store.js';
import type { Principal } from './principal.js';
import type { QuotaService } from './quota-service.js';

export interface SecretInput {
  name: string;
  value: string;
}

export interface SecretServiceOptions {
  store: Pick<Store, 'secrets' | 'endpoints'>;
  secrets: SecretBox;
  clock: Clock;
  /** Per-owner quotas, checked in a save of a new secret's transaction; absent: none. */
  quotas?: QuotaService;
}

export class SecretService {
  readonly #o: SecretServiceOptions;

  constructor(options: SecretServiceOptions) {
    this.#o = options;
  }

  /** Creates the secret or replaces its value; workers started from then on get the new value. */
  async save(principal: Principal, input: SecretInput): Promise<{ name: string; replaced: boolean }> {
    checkName(input.name);
    if (input.value === '' || input.value.length > MAX_SECRET_VALUE_LENGTH) {
      throw new ApiError(
        'INVALID_FIELD',
        `value must be a non-empty string of at most ${MAX_SECRET_VALUE_LENGTH} characters`,
        { field: 'value' },
      );
    }
    const { store, secrets, clock, quotas } = this.#o;
    const admit = await quotas?.admitCount(principal, 'secrets');
    const at = clock();
    const replaced = await store.secrets.put(
      {
        ownerId: principal.ownerId,
        name: input.name,
        encryptedValue: secrets.seal(input.value),
        createdAt: at,
        updatedAt: at,
      },
      { at, ownerId: principal.ownerId, actor: principal.keyId, action: 'secret.save', targetId: input.name },
      admit,
    );
    return { name: input.name, replaced };
  }

  list(principal: Principal): Promise<SecretSummary[]> {
    return this.#o.store.secrets.list(principal.ownerId);
  }

  async delete(principal: Principal, name: string): Promise<void> {
    checkName(name);
    const { store, clock } = this.#o;
    const users = await store.endpoints.idsUsingSecret(principal.ownerId, name);
    if (users.length > 0) {
      throw new ApiError(
        'SECRET_IN_USE',
        `secret "${name}" is referenced by the envs or models of ${users.length} endpoint(s); change them first`,
        { name, endpoints: users },
      );
    }
    const audit = {
      at: clock(),
      ownerId: principal.ownerId,
      actor: principal.keyId,
      action: 'secret.delete',
      targetId: name,
    };
    if (!(await store.secrets.delete(principal.ownerId, name, audit))) {
      throw new ApiError('SECRET_NOT_FOUND', `you have no secret named "${name}"`, { name });
    }
  }

  /**
   * The env a worker starts with: every `{{ CORRAL_SECRET_name }}` replaced by the owner's value. Throws
   * MissingSecretError (env and secret named, no value) when one is gone. Only the controller calls this.
   */
  async resolveEnv(ownerId: string, env: Readonly<Record<string, string>>): Promise<Record<string, string>> {
    const names = [...new Set(Object.values(env).flatMap(secretReferences))];
    if (names.length === 0) return { ...env };
    const values = await this.#open(ownerId, names);
    // Measured before anything is built: a secret that grew since the spec was checked fails this start with the
    // limit's name, instead of the server building megabytes for it.
    const bytes = new Map([...values].map(([name, value]) => [name, Buffer.byteLength(value)]));
    const problem = envBoundProblem(resolvedEnvSize(Object.entries(env), (name) => bytes.get(name)));
    if (problem) throw new ResolvedEnvTooLargeError(problem.message);
    return resolveSecretReferences(env, values);
  }

  /**
   * The size in UTF-8 bytes of each of these secrets the owner has, for the bound on a spec's resolved env at
   * create and update (values are opened here and never leave).
   */
  async sizes(ownerId: string, names: readonly string[]): Promise<Map<string, number>> {
    if (names.length === 0) return new Map();
    const values = await this.#open(ownerId, names);
    return new Map([...values].map(([name, value]) => [name, Buffer.byteLength(value)]));
  }

  /**
   * One secret's value, or undefined when the owner has none of that name: a model's hub token, opened for the hub
   * check at create and update and for the download at a worker's start. It goes to the hub and nowhere else.
   */
  async value(ownerId: string, name: string): Promise<string | undefined> {
    return (await this.#open(ownerId, [name])).get(name);
  }

  async #open(ownerId: string, names: readonly string[]): Promise<Map<string, string>> {
    const sealed = await this.#o.store.secrets.sealed(ownerId, names);
    return new Map([...sealed].map(([name, value]) => [name, this.#o.secrets.open(value)]));
  }
}

function checkName(name: string): void {
  if (!SECRET_NAME.test(name)) {
    throw new ApiError(
      'INVALID_FIELD',
      'name must be 1-64 letters, digits, "_" or "-" (it is referenced as {{ CORRAL_SECRET_name }})',
      { field: 'name' },
    );
  }
}
