/**
 * The PersistentVolumeClaims of the network storages a worker mounts (config: each storage's `claimName`), checked
 * before its pod is made: a missing one fails the create at once instead of leaving the pod waiting for it forever.
 */
import { RuntimeError, type WorkerSpec } from '../types.js';
import type { KubernetesApi } from './api.js';
import { isApiNotFound } from './api-errors.js';

/** Throws RUNTIME_ERROR for the first network volume whose claim is not in `namespace`. */
export async function checkNetworkClaims(
  api: Pick<KubernetesApi, 'readPersistentVolumeClaim'>,
  namespace: string,
  /** Storage host path -> its claim (pod-spec.ts PodOptions). */
  claims: Readonly<Record<string, string>>,
  volumes: WorkerSpec['volumes'],
): Promise<void> {
  for (const volume of volumes) {
    if (volume.type !== 'network') continue;
    const claim = claims[volume.hostPath];
    if (claim === undefined) continue; // podSpec says so
    try {
      await api.readPersistentVolumeClaim(namespace, claim);
    } catch (error) {
      if (isApiNotFound(error)) {
        throw new RuntimeError(
          'RUNTIME_ERROR',
          `PersistentVolumeClaim ${claim} (storage ${volume.hostPath}) does not exist in namespace ${namespace}`,
        );
      }
      throw error;
    }
  }
}
