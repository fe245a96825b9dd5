/**
 * The environment of a local worker (pure): Corral's own environment minus anything Corral-specific, plus the
 * spec's envs, the host port as PORT, the worker's ids, its GPUs and the directories standing in for its mounts.
 */
import path from 'node:path';
import type { WorkerSpec } from '../types.js';

/** Inherited variables a worker must never see; every other CORRAL_* variable is dropped as well. */
export const SCRUBBED_ENV = ['CORRAL_API_KEY', 'CORRAL_SECRET_KEY', 'CORRAL_DATABASE_URL'] as const;

/** A volume as the local runtime gives it: a directory named by an env var instead of a mount. */
export interface LocalMount {
  mountPath: string;
  dir: string;
}

/** `/data/models` -> `CORRAL_MOUNT_DATA_MODELS`; `/` -> `CORRAL_MOUNT_ROOT`. */
export function mountEnvName(mountPath: string): string {
  const name = mountPath
    .toUpperCase()
    .replace(/[^A-Z0-9]+/g, '_')
    .replace(/^_+|_+$/g, '');
  return `CORRAL_MOUNT_${name || 'ROOT'}`;
}

/** The worker's environment: inherited minus Corral's, plus the spec's, PORT, ids, GPUs and mounts. */
export function localWorkerEnv(
  spec: WorkerSpec,
  baseEnv: NodeJS.ProcessEnv,
  hostPort: number,
  mounts: LocalMount[],
): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [key, value] of Object.entries(baseEnv)) {
    if (value === undefined) continue;
    if (key.startsWith('CORRAL_') || (SCRUBBED_ENV as readonly string[]).includes(key)) continue;
    if (key === 'NVIDIA_VISIBLE_DEVICES' || key === 'CUDA_VISIBLE_DEVICES') continue;
    env[key] = value;
  }
  Object.assign(env, spec.env);
  env.PORT = String(hostPort);
  env.CORRAL_WORKER_ID = spec.workerId;
  env.CORRAL_ENDPOINT_ID = spec.endpointId;
  // UUIDs rather than indices: CUDA orders devices fastest-first by default, not as nvidia-smi numbers them.
  const uuids = spec.gpus.map((gpu) => gpu.uuid).join(',');
  env.NVIDIA_VISIBLE_DEVICES = uuids === '' ? 'void' : uuids;
  env.CUDA_VISIBLE_DEVICES = uuids;
  for (const mount of mounts) env[mountEnvName(mount.mountPath)] = mount.dir;
  // No mounts here: the hub's clients read the models from the cache's own directory (one owner: single-tenant).
  const model = spec.volumes.find((v) => v.type === 'model');
  if (model && env.HF_HUB_CACHE !== undefined && model.mountPath.startsWith(`${env.HF_HUB_CACHE}/`))
    env.HF_HUB_CACHE = path.dirname(model.hostPath);
  return env;
}
