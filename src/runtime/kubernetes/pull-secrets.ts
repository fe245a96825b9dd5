/**
 * The namespace's pull Secrets of this installation, one per registry credential: created when a worker of the
 * credential first needs it, deleted when no pod of the installation refers to it any more. The Secret holds the
 * password: only its name is ever logged.
 */
import type { Logger } from 'pino';
import type { RegistryAuth } from '../types.js';
import type { KubernetesApi } from './api.js';
import { isApiConflict, isApiNotFound } from './api-errors.js';
import type { Pod } from './objects.js';
import { type PodOptions, pullSecret, pullSecretName } from './pod-spec.js';

export interface PullSecretsOptions {
  api: KubernetesApi;
  podOptions: Pick<PodOptions, 'namespace' | 'namePrefix' | 'installationLabels'>;
  /** Selects this installation's pull Secrets (managed, installation). */
  labelSelector: string;
  logger: Logger;
}

export class PullSecrets {
  readonly #o: PullSecretsOptions;
  /** Names of this installation's pull Secrets, once listed. */
  #known: Set<string> | undefined;
  /** Secrets a create is making or using before its pod exists: never pruned meanwhile. */
  readonly #held = new Map<string, number>();

  constructor(options: PullSecretsOptions) {
    this.#o = options;
  }

  /**
   * Makes the credential's Secret exist and holds it until `release` is called (after the pod is created or the
   * create failed). Returns its name, or undefined when the credential has no login (a public image after all).
   */
  async acquire(
    authId: string,
    ownerId: string,
    auth: (() => Promise<RegistryAuth | undefined>) | undefined,
  ): Promise<string | undefined> {
    const name = pullSecretName(authId, this.#o.podOptions);
    this.#held.set(name, (this.#held.get(name) ?? 0) + 1);
    try {
      const known = await this.#names();
      if (known.has(name)) return name;
      const login = await auth?.();
      if (!login) return undefined;
      try {
        await this.#o.api.createSecret(
          this.#o.podOptions.namespace,
          pullSecret({ authId, ownerId, auth: login }, this.#o.podOptions),
        );
        this.#o.logger.info({ secret: name }, 'pull Secret created');
      } catch (error) {
        if (!isApiConflict(error)) throw error;
      }
      known.add(name);
      return name;
    } catch (error) {
      this.release(name);
      throw error;
    }
  }

  release(name: string): void {
    const count = (this.#held.get(name) ?? 0) - 1;
    if (count > 0) this.#held.set(name, count);
    else this.#held.delete(name);
  }

  /**
   * Deletes this installation's pull Secrets that none of `pods` (this installation's, as the watch sees them) refers
   * to and no create holds; a failure is logged (tried at the next).
   */
  async prune(pods: Iterable<Pod>): Promise<void> {
    const inUse = new Set<string>();
    for (const pod of pods) {
      for (const ref of pod.spec?.imagePullSecrets ?? []) inUse.add(ref.name);
    }
    await this.#prune(inUse).catch((error: unknown) => {
      this.#o.logger.warn({ err: (error as Error).message }, 'cannot prune pull Secrets');
    });
  }

  async #prune(inUse: ReadonlySet<string>): Promise<void> {
    const known = await this.#names();
    for (const name of [...known]) {
      if (inUse.has(name) || this.#held.has(name)) continue;
      try {
        await this.#o.api.deleteSecret(this.#o.podOptions.namespace, name);
        this.#o.logger.info({ secret: name }, 'pull Secret deleted: no worker uses it');
      } catch (error) {
        if (!isApiNotFound(error)) throw error;
      }
      known.delete(name);
    }
  }

  async #names(): Promise<Set<string>> {
    if (!this.#known) {
      const list = await this.#o.api.listSecrets(this.#o.podOptions.namespace, this.#o.labelSelector);
      this.#known ??= new Set(list.items.map((s) => s.metadata?.name ?? '').filter((n) => n !== ''));
    }
    return this.#known;
  }
}
