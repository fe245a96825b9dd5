/** The private-image guard of a runtime that holds images (docs/api.md, Private images). */
import type { Config } from '../config/config.js';
import { systemClock } from '../ports/clock.js';
import { ImageAccessGuard } from '../registry/image-access-guard.js';
import { registryManifestCheck } from '../registry/manifest-check.js';
import { RegistryGuard } from '../registry/registry-guard.js';
import type { WorkerRuntime } from '../runtime/types.js';
import type { CredentialService } from '../service/credential-service.js';
import type { Store } from '../store/store.js';

/**
 * Private images stay private (docs/api.md, Private images): on a runtime that holds images, the registry is asked
 * whether the owner's own credentials pull an image, at create/update and before each worker start.
 */
export function imageAccessGuard(
  runtime: WorkerRuntime,
  config: Config,
  credentials: CredentialService,
): ImageAccessGuard | undefined {
  const localImage = runtime.localImage?.bind(runtime);
  if (!localImage) return undefined;
  const registries = new RegistryGuard({ allowPrivate: config.registries.allowPrivate });
  return new ImageAccessGuard({
    localImage,
    checkManifest: registryManifestCheck({ guard: registries }),
    registries,
    login: (ownerId, authId) => credentials.reveal(ownerId, authId),
    allowLocal: config.allowLocalImages,
    clock: systemClock,
  });
}

/** Whether the owner holds an admin key that is not revoked (a worker start has no caller to ask). */
export async function ownerIsAdmin(store: Store, ownerId: string): Promise<boolean> {
  return (await store.apiKeys.list(ownerId)).some((key) => key.admin && key.revokedAt === null);
}
