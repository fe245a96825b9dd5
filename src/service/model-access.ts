/**
 * The hub's word on an endpoint's models, asked at create and update with the owner's token (issue 34): a model the
 * hub refuses (no such repository, revision or file; gated without access; a token it does not take) is said then,
 * with a stable code, rather than when a worker starts. The token is opened here only to be handed to the cache.
 */
import { modelLabel } from '../domain/model-refs.js';
import type { ModelRef } from '../domain/models.js';
import { ApiError } from '../errors/api-catalogue.js';
import { type CheckedModel, isModelRefusal, type ModelCache } from '../ports/model-cache.js';

/** An owner's secret's value by name (the secret service). */
export type SecretValue = (ownerId: string, name: string) => Promise<string | undefined>;

export interface ModelAccessOptions {
  cache: Pick<ModelCache, 'check'>;
  secretValue: SecretValue;
}

export class ModelAccess {
  readonly #o: ModelAccessOptions;

  constructor(options: ModelAccessOptions) {
    this.#o = options;
  }

  /** The owner's hub token for the model: null for a model without a tokenSecret, or whose secret is gone. */
  async tokenFor(ownerId: string, model: Pick<ModelRef, 'tokenSecret'>): Promise<string | null> {
    if (model.tokenSecret === null) return null;
    return (await this.#o.secretValue(ownerId, model.tokenSecret)) ?? null;
  }

  /** Throws the first refusal of the hub, naming the model's field; models that `before` named already are not asked. */
  async check(ownerId: string, models: readonly ModelRef[], before: readonly ModelRef[] = []): Promise<void> {
    const known = new Set(before.map((m) => JSON.stringify(m)));
    for (const [index, model] of models.entries()) {
      if (!known.has(JSON.stringify(model))) await this.checkOne(ownerId, model, `models.${index}.name`);
    }
  }

  /** The model as the hub resolves it with the owner's token, or its refusal thrown naming `field`. */
  async checkOne(ownerId: string, model: ModelRef, field: string): Promise<CheckedModel> {
    const verdict = await this.#o.cache.check(model, await this.tokenFor(ownerId, model));
    if (isModelRefusal(verdict)) {
      throw new ApiError(verdict.code, `model ${modelLabel(model)}: ${verdict.message}`, {
        field,
        model: model.name,
        revision: model.revision,
      });
    }
    return verdict;
  }
}
