/**
 * The Docker runtime's images: what the engine holds (`localImage`) and making an image present before a worker's
 * container (`prepareImage`: inspect, else pull with the registry credentials, decrypted for that pull only, its
 * progress read by pull-progress.ts). I/O only; DockerRuntime delegates to it.
 */
import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import {
  type ImageRequest,
  type LocalImage,
  type PullProgress,
  type RegistryAuth,
  RuntimeError,
} from '../types.js';
import { engineError, isNotFound, isUnreachable, reasonOf } from './engine-errors.js';
import { imagePathName } from './engine-requests.js';
import { closeLocalImage } from './image-suggestion.js';
import { pullFailureReason } from './pull-failure.js';
import { type PullMessage, PullProgressTracker, pullError } from './pull-progress.js';

export interface EngineImagesOptions {
  docker: Dockerode;
  logger: Logger;
  /** Where the engine is (engineAddress), for messages. */
  address: string;
}

export class EngineImages {
  readonly #docker: Dockerode;
  readonly #logger: Logger;
  readonly #address: string;

  constructor(options: EngineImagesOptions) {
    this.#docker = options.docker;
    this.#logger = options.logger;
    this.#address = options.address;
  }

  async localImage(image: string): Promise<LocalImage | undefined> {
    try {
      const inspected = await this.#docker.getImage(imagePathName(image)).inspect();
      return { id: inspected.Id, repoDigests: inspected.RepoDigests ?? [] };
    } catch (error) {
      if (isNotFound(error)) return undefined;
      throw engineError(error, `cannot inspect image ${image}`, this.#address);
    }
  }

  async prepareImage(request: ImageRequest, onProgress?: (progress: PullProgress) => void): Promise<void> {
    const { image, workerId } = request;
    try {
      await this.#docker.getImage(imagePathName(image)).inspect();
      return;
    } catch (error) {
      if (!isNotFound(error)) throw engineError(error, `cannot inspect image ${image}`, this.#address);
    }
    const log = this.#logger.child({ image, ...(workerId === undefined ? {} : { workerId }) });
    try {
      // Decrypted here, for this pull only.
      const auth = await request.registryAuth?.();
      log.info({ registry: auth?.server || undefined, authenticated: auth !== undefined }, 'pulling');
      await this.#pull(image, auth, onProgress);
      await this.#docker.getImage(imagePathName(image)).inspect();
    } catch (error) {
      const failure = await this.#withSuggestion(pullFailure(error, image, this.#address), image);
      log.warn({ code: failure.code, reason: failure.message }, 'pull failed');
      throw failure;
    }
    log.info('pulled');
  }

  /**
   * A pull that failed for a name the engine holds a close one of (a typo of a local image, with no registry to
   * ask): the cause names it. The registry's reason stays, in its fixed words (pull-failure.ts).
   */
  async #withSuggestion(failure: RuntimeError, image: string): Promise<RuntimeError> {
    if (failure.code !== 'IMAGE_PULL_FAILED') return failure;
    const local = await this.#docker.listImages().catch(() => []);
    const meant = closeLocalImage(
      image,
      local.flatMap((summary) => summary.RepoTags ?? []),
    );
    if (meant === undefined) return failure;
    const reason = failure.message.replace(`cannot pull image ${image}: `, '');
    return new RuntimeError(
      'IMAGE_PULL_FAILED',
      `no image ${image} on this machine or its registry (${reason}); did you mean ${meant}?`,
    );
  }

  async #pull(
    image: string,
    auth: RegistryAuth | undefined,
    onProgress?: (progress: PullProgress) => void,
  ): Promise<void> {
    const authconfig = auth
      ? {
          username: auth.username,
          password: auth.password,
          ...(auth.server ? { serveraddress: auth.server } : {}),
        }
      : undefined;
    const tracker = new PullProgressTracker(image);
    onProgress?.(tracker.current());
    const stream = await this.#docker.pull(image, authconfig ? { authconfig } : {});
    let failure: string | undefined;
    await new Promise<void>((resolve, reject) => {
      this.#docker.modem.followProgress(
        stream,
        (error) => (error ? reject(error) : resolve()),
        (message: PullMessage) => {
          failure ??= pullError(message);
          const progress = failure ? undefined : tracker.update(message);
          if (progress) onProgress?.(progress);
        },
      );
    });
    if (failure) throw new RuntimeError('IMAGE_PULL_FAILED', pulling(image, failure));
  }
}

/**
 * A failed pull as the worker's state says it: the engine unreachable as every engine call says it; else fixed
 * words (pull-failure.ts), since the engine's own quote what the registry answered.
 */
function pullFailure(error: unknown, image: string, address: string): RuntimeError {
  if (isUnreachable(error)) return engineError(error, `cannot pull image ${image}`, address);
  // Corral's own (a credential that cannot be decrypted, an in-band failure already in fixed words).
  if (error instanceof RuntimeError) return error;
  return new RuntimeError('IMAGE_PULL_FAILED', pulling(image, reasonOf(error)));
}

function pulling(image: string, engineText: string): string {
  return `cannot pull image ${image}: ${pullFailureReason(engineText)}`;
}
