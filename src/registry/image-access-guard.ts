/**
 * `ImageAccessGuard`: gathers the facts for an image access verdict (the local image from the engine, the owner's
 * registry login, the registry's manifest answers) and remembers recent grants briefly, so that a burst of worker
 * starts asks the registry once. The decision itself is image-access.ts.
 */
import {
  type CheckPoint,
  decideImageAccess,
  type ImageAccessVerdict,
  type LocalImage,
  type LocalImageAllowance,
  planAccessCheck,
} from './image-access.js';
import { parseImageReference, registryHost } from './image-reference.js';
import type { ManifestCheck, ManifestResult, RegistryLogin } from './manifest-check.js';
import type { RegistryGuard } from './registry-guard.js';

export interface ImageAccessRequest {
  ownerId: string;
  /** The endpoint's image.authId; empty for none. */
  authId: string;
  image: string;
  at: CheckPoint;
  /** Whether the caller is an admin; asked only for a local-only image. */
  admin: boolean | (() => Promise<boolean>);
}

export interface ImageAccessGuardOptions {
  /** The engine's image under that name, or undefined when it has none. */
  localImage: (image: string) => Promise<LocalImage | undefined>;
  checkManifest: ManifestCheck;
  /**
   * Which registries the engine may pull from: asked before a start pulls an absent image (the manifest check asks
   * it for its own connections).
   */
  registries: RegistryGuard;
  /** The owner's decrypted registry login for an authId. */
  login: (ownerId: string, authId: string) => Promise<RegistryLogin | undefined>;
  allowLocal: LocalImageAllowance;
  clock: () => number;
  /** How long a verified grant is reused for the same owner, credentials and local image; default 60 s. */
  grantTtlMs?: number;
}

/** Checks that an owner may run an image (see docs/workers.md, Private images). */
export class ImageAccessGuard {
  readonly #o: ImageAccessGuardOptions;
  readonly #grants = new Map<string, number>();

  constructor(options: ImageAccessGuardOptions) {
    this.#o = options;
  }

  async check(request: ImageAccessRequest): Promise<ImageAccessVerdict> {
    const { image, at } = request;
    let local: LocalImage | undefined;
    try {
      local = await this.#o.localImage(image);
    } catch (error) {
      if (at === 'start') {
        return {
          allowed: false,
          cause: 'unverifiable',
          message: `cannot inspect image ${image} before the start: ${(error as Error).message}`,
        };
      }
      // At create the engine's view is a hint: the registry is asked as for an absent image.
      local = undefined;
    }
    const plan = planAccessCheck(image, local, at);
    if (plan.kind === 'pull-decides') {
      const refused = await this.#pullRefused(image);
      if (refused) return refused;
    }
    const grantKey = [request.ownerId, request.authId, image, local?.id ?? ''].join('\0');
    const now = this.#o.clock();
    if ((this.#grants.get(grantKey) ?? 0) > now) return { allowed: true, verified: true };
    let results: ManifestResult[] = [];
    if (plan.kind === 'registry') {
      const login = request.authId === '' ? undefined : await this.#o.login(request.ownerId, request.authId);
      results = await Promise.all(
        plan.refs.map((ref) =>
          this.#o.checkManifest(ref, ref.registry === plan.loginRegistry ? login : undefined),
        ),
      );
    }
    const admin =
      plan.kind === 'local-only' && typeof request.admin === 'function'
        ? await request.admin()
        : request.admin === true;
    const verdict = decideImageAccess({ image, plan, at, results, admin, allowLocal: this.#o.allowLocal });
    if (verdict.allowed && verdict.verified && plan.kind === 'registry') {
      this.#forgetExpired(now);
      this.#grants.set(grantKey, now + (this.#o.grantTtlMs ?? 60_000));
    }
    return verdict;
  }

  /** The engine is about to pull: not from a registry the guard refuses (it resolves the name again itself). */
  async #pullRefused(image: string): Promise<ImageAccessVerdict | undefined> {
    const ref = parseImageReference(image);
    if (!ref) return undefined;
    const connection = await this.#o.registries.check(registryHost(ref.registry));
    if (connection.kind !== 'refused') return undefined;
    return { allowed: false, cause: 'private-registry', message: connection.reason };
  }

  #forgetExpired(now: number): void {
    for (const [key, until] of this.#grants) if (until <= now) this.#grants.delete(key);
  }
}
