/**
 * Each worker's env Secret (pod-spec.ts, workerEnvSecret): made before its pod, deleted when the pod is gone (by
 * Corral's removal, a failed start, someone else's delete or an eviction: the watch says), and those whose pod is
 * gone while Corral was not running deleted at the first listing. The Secrets hold resolved secrets and job
 * tokens: only their names are ever logged.
 */
import type { Logger } from 'pino';
import type { KubernetesApi } from './api.js';
import { isApiConflict, isApiNotFound } from './api-errors.js';
import type { SecretManifest } from './objects.js';

export interface WorkerEnvSecretsOptions {
  api: KubernetesApi;
  namespace: string;
  /** Selects this installation's worker env Secrets (managed, installation, worker-env). */
  labelSelector: string;
  logger: Logger;
}

export class WorkerEnvSecrets {
  readonly #o: WorkerEnvSecretsOptions;

  constructor(options: WorkerEnvSecretsOptions) {
    this.#o = options;
  }

  /**
   * Makes the worker's Secret; one of the same name left by an earlier start is replaced. Returns the made Secret's
   * uid (its pod names it as its controller: pod-spec.ts, envSecretOwner).
   */
  async create(secret: SecretManifest): Promise<string | undefined> {
    try {
      return (await this.#o.api.createSecret(this.#o.namespace, secret)).metadata?.uid;
    } catch (error) {
      if (!isApiConflict(error)) throw error;
      await this.delete(secret.metadata.name);
      return (await this.#o.api.createSecret(this.#o.namespace, secret)).metadata?.uid;
    }
  }

  /** Deletes a worker's Secret; one already gone is fine. */
  async delete(name: string): Promise<void> {
    try {
      await this.#o.api.deleteSecret(this.#o.namespace, name);
    } catch (error) {
      if (!isApiNotFound(error)) throw error;
    }
  }

  /** Deletes it without waiting; a failure is logged (the next start's prune tries again). */
  forget(name: string): void {
    this.delete(name).catch((error: unknown) => {
      this.#o.logger.warn(
        { secret: name, err: (error as Error).message },
        'cannot delete a worker env Secret',
      );
    });
  }

  /** Deletes this installation's worker env Secrets whose pod is not among `pods` (names). */
  async prune(pods: ReadonlySet<string>): Promise<void> {
    const list = await this.#o.api.listSecrets(this.#o.namespace, this.#o.labelSelector);
    for (const secret of list.items) {
      const name = secret.metadata?.name ?? '';
      if (name === '' || pods.has(name)) continue;
      await this.delete(name);
      this.#o.logger.info({ secret: name }, 'worker env Secret deleted: its pod is gone');
    }
  }
}
