/**
 * An operator's hand on the machine's model cache (issue 34, docs/models.md): `POST models` pulls a model with the
 * caller's own token (validated and checked on the hub as one item of an endpoint's `models` is, then downloaded
 * after the answer where workers mount models from: this machine's cache, or, where the runtime keeps them, the
 * workers' machines' own instead (the GPU nodes', through the ensure a worker's start uses)), and `DELETE models/{org}/{name}` removes one from this machine's cache and every workers'
 * machine's (the GPU nodes', through their agents): refused while an endpoint names it or while it is downloaded. Who pulled which model is remembered in this process, so an owner's `GET models` shows what it pulled.
 */
import { modelIssues, modelLabel, modelNameProblem, modelRevisionProblem } from '../domain/model-refs.js';
import type { ModelRef } from '../domain/models.js';
import type { ValidationIssue } from '../domain/validate.js';
import { ApiError } from '../errors/api-catalogue.js';
import {
  type CachedModel,
  combinedRemoval,
  type MachineModelCaches,
  type ModelCache,
  type ModelProgress,
  ModelRefusedError,
  type ResolvedModel,
} from '../ports/model-cache.js';
import { ModelAccess, type SecretValue } from './model-access.js';

export interface ModelPullsOptions {
  cache: Pick<ModelCache, 'check' | 'ensure' | 'list' | 'progress' | 'remove'>;
  /** The workers' machines' own caches (the GPU nodes'): a pull fills them too, a removal is from them too. */
  machines?: Pick<MachineModelCaches, 'ensure' | 'removeEverywhere'> | undefined;
  secretValue: SecretValue;
  /** Model name -> the endpoints naming it, of every owner. */
  users: () => Promise<ReadonlyMap<string, readonly { endpointId: string; endpointName: string }[]>>;
  toValidationError: (issues: ValidationIssue[]) => ApiError;
  clock: () => number;
  logger: {
    info(fields: object, message: string): void;
    warn(fields: object, message: string): void;
  };
}

/** What a pull found: a download begun (with its progress so far) or the model already here. */
export interface PulledModel {
  started: boolean;
  model: CachedModel;
  download: ModelProgress | null;
}

export class ModelPulls {
  readonly #o: ModelPullsOptions;
  readonly #access: ModelAccess;
  /** Model name -> the owners that pulled it (their `GET models` shows it). */
  readonly #pulledBy = new Map<string, Set<string>>();

  constructor(options: ModelPullsOptions) {
    this.#o = options;
    this.#access = new ModelAccess({ cache: options.cache, secretValue: options.secretValue });
  }

  /** Whether the owner pulled the model (since this process started). */
  pulledBy(ownerId: string, name: string): boolean {
    return this.#pulledBy.get(name)?.has(ownerId) ?? false;
  }

  /**
   * Checks the model with the owner's token, then makes it present: an answer once a download has begun (it goes on
   * after), or once the model is here when every file already was.
   */
  async pull(ownerId: string, model: ModelRef): Promise<PulledModel> {
    const secretNames = new Set<string>();
    if (model.tokenSecret !== null && (await this.#o.secretValue(ownerId, model.tokenSecret)) !== undefined)
      secretNames.add(model.tokenSecret);
    const issues = modelIssues(model, '', secretNames);
    if (issues.length > 0) throw this.#o.toValidationError(issues);
    const checked = await this.#access.checkOne(ownerId, model, 'name');
    const token = await this.#access.tokenFor(ownerId, model);
    const owners = this.#pulledBy.get(model.name) ?? new Set<string>();
    owners.add(ownerId);
    this.#pulledBy.set(model.name, owners);
    const { bytesMissing, ...resolved } = checked;
    // Where workers mount models from (each GPU node, labelled as holding it), and only there: no worker mounts
    // this machine's cache when the runtime keeps the workers' machines' own.
    if (this.#o.machines) return this.#pullOnMachines(ownerId, model, token, resolved, this.#o.machines);
    if (bytesMissing === 0) {
      // Every file is here: ensure only links this revision's snapshot (and checks the token once more).
      return {
        started: false,
        model: await this.#ensured(this.#o.cache.ensure(model, token)),
        download: null,
      };
    }
    // The answer waits for the download to be under way (listed with its progress), or for its end if it ends first.
    await this.#underWay(ownerId, model, 'this machine', (onProgress) =>
      this.#o.cache.ensure(model, token, onProgress),
    );
    const listed = (await this.#o.cache.list()).find(
      (entry) => entry.name === model.name && entry.commit === checked.commit,
    );
    return {
      started: true,
      model: listed ?? {
        ...resolved,
        repoDir: '',
        lastUsedAt: this.#o.clock(),
        diskBytes: resolved.bytes - bytesMissing,
      },
      download: this.#o.cache.progress(model),
    };
  }

  /**
   * A pull into the workers' machines' caches: answered once their download is under way (with its progress summed
   * over the machines, as a waiting worker shows it), or once it ended if it ends first (every machine held it).
   */
  async #pullOnMachines(
    ownerId: string,
    model: ModelRef,
    token: string | null,
    resolved: ResolvedModel,
    machines: Pick<MachineModelCaches, 'ensure'>,
  ): Promise<PulledModel> {
    const first = await this.#underWay(ownerId, model, "the workers' machines", (onProgress) =>
      machines.ensure(model, token, onProgress),
    );
    if ('ended' in first) return { started: false, model: first.ended, download: null };
    return {
      started: true,
      model: { ...resolved, repoDir: '', lastUsedAt: this.#o.clock(), diskBytes: first.progress.bytesDone },
      download: first.progress,
    };
  }

  /**
   * Starts a pull's download into one place's cache (its end logged, not awaited) and waits for its first progress,
   * or for its end if it ends first (nothing was missing).
   */
  async #underWay(
    ownerId: string,
    model: ModelRef,
    where: string,
    start: (onProgress: (progress: ModelProgress) => void) => Promise<CachedModel>,
  ): Promise<{ progress: ModelProgress } | { ended: CachedModel }> {
    let begun: (progress: ModelProgress) => void = () => {};
    const reported = new Promise<ModelProgress>((resolve) => {
      begun = resolve;
    });
    const download = start((progress) => begun(progress));
    this.#logEnd(ownerId, model, where, download);
    return this.#ensured(
      Promise.race([reported.then((progress) => ({ progress })), download.then((ended) => ({ ended }))]),
    );
  }

  /** Logs the end of a pull's download into one place's cache (the answer does not wait for it). */
  #logEnd(ownerId: string, model: ModelRef, where: string, download: Promise<CachedModel>): void {
    const started = this.#o.clock();
    download.then(
      (cached) =>
        this.#o.logger.info(
          { ownerId, model: model.name, commit: cached.commit, where, ms: this.#o.clock() - started },
          'pulled model ready',
        ),
      (error: unknown) =>
        this.#o.logger.warn(
          { ownerId, model: model.name, revision: model.revision, where, err: error },
          'model pull failed',
        ),
    );
  }

  /** A refusal the hub gave the download itself (after the check) as the API says refusals. */
  async #ensured<T>(ensure: Promise<T>): Promise<T> {
    try {
      return await ensure;
    } catch (error) {
      if (error instanceof ModelRefusedError)
        throw new ApiError(error.refusal.code, error.refusal.message, { field: 'name' });
      throw error;
    }
  }

  /** Removes a model (one revision, or all); refused while an endpoint names it or while it is downloaded. */
  async remove(name: string, revision: string | undefined): Promise<void> {
    const nameProblem = modelNameProblem(name);
    if (nameProblem !== undefined)
      throw new ApiError('INVALID_FIELD', `model name ${nameProblem}`, { field: 'name' });
    const revisionProblem = revision === undefined ? undefined : modelRevisionProblem(revision);
    if (revisionProblem !== undefined)
      throw new ApiError('INVALID_FIELD', `model revision ${revisionProblem}`, { field: 'revision' });
    const label = revision === undefined ? name : modelLabel({ name, revision });
    const users = (await this.#o.users()).get(name) ?? [];
    if (users.length > 0) {
      throw new ApiError(
        'MODEL_IN_USE',
        `model ${name} is named by ${users.map((user) => user.endpointName).join(', ')}; change those endpoints first`,
        { model: name, endpoints: users.map((user) => ({ ...user })) },
      );
    }
    const [own, machines] = await Promise.all([
      this.#o.cache.remove(name, revision),
      this.#o.machines?.removeEverywhere(name, revision),
    ]);
    const removal = combinedRemoval(machines ? [own, machines.removal] : [own]);
    if (removal !== 'downloading' && machines && machines.unreachable.length > 0)
      throw new ApiError(
        'MODEL_NODE_UNREACHABLE',
        `model ${label} could not be removed from ${machines.unreachable.map((m) => `${m.machine} (${m.message})`).join(', ')}; removed from the machines that answered; retry`,
        { model: name, nodes: machines.unreachable.map((m) => m.machine) },
      );
    if (removal === 'not_cached')
      throw new ApiError(
        'MODEL_NOT_CACHED',
        `model ${label} is not in ${machines ? 'any' : 'this'} machine's cache`,
        {
          model: name,
        },
      );
    if (removal === 'downloading')
      throw new ApiError('MODEL_DOWNLOADING', `model ${name} is being downloaded; remove it once that ends`, {
        model: name,
      });
    if (!(await this.#o.cache.list()).some((entry) => entry.name === name)) this.#pulledBy.delete(name);
    this.#o.logger.info({ model: name, revision: revision ?? null }, 'model removed from the cache');
  }
}
