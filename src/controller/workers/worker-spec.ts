/** What a worker runs: the runtime's WorkerSpec built from its endpoint and GPUs (pure), and its registry credentials. */
import path from 'node:path';
import type { Endpoint, EnvVar } from '../../domain/endpoint.js';
import { floatsOnLatest } from '../../domain/image-name.js';
import { modelEnv, modelRepoDir, workerModelPath } from '../../domain/model-refs.js';
import type { ModelRef } from '../../domain/models.js';
import type { Gpu } from '../../gpu/inventory.js';
import { LABELS, type RegistryAuth, type RuntimeVolume, type WorkerSpec } from '../../runtime/types.js';
import type { ManagedWorker } from './managed-worker.js';

/** Decrypts registry credentials by owner and id (the credential service). */
export type RevealCredentials = (
  ownerId: string,
  id: string,
) => Promise<{ username: string; password: string } | undefined>;

export interface WorkerSpecContext {
  /** Network storage id -> host path. */
  storagePaths: ReadonlyMap<string, string>;
  /** Yields the image's registry credentials; called by the runtime only when it pulls. */
  registryAuth?: () => Promise<RegistryAuth | undefined>;
  /** A worker's host memory per GPU it has, in GiB (config `workers.memoryGBPerGpu`); undefined: no limit. */
  memoryGBPerGpu?: number;
  /** Labelled on the worker (LABELS.installation), so that only this installation adopts or removes it. */
  installationId?: string;
  /** Network storages every worker mounts read-only. */
  readOnlyStorages?: ReadonlySet<string>;
  /** The product placement picked where no GPU of Corral's says it (a scheduler places the worker); '' none. */
  productId?: string;
  /** A queue worker's RunPod protocol variables, under the endpoint's own envs (which override them). */
  protocolEnv?: readonly EnvVar[];
  /** The machine's hub cache directory (the model cache's hubDir), where the endpoint's models are mounted from. */
  modelHubDir?: string;
}

const GIB = 1024 ** 3;

/**
 * The endpoint's registry credentials as the runtime's pull asks for them: decrypted only when called, which only a
 * pull does. Undefined for an image without an authId.
 */
export function registryAuthFor(
  endpoint: Endpoint,
  reveal: RevealCredentials,
): (() => Promise<RegistryAuth | undefined>) | undefined {
  const { authId, ref } = endpoint.spec.image;
  if (authId === '') return undefined;
  const { ownerId } = endpoint;
  return async () => {
    const credentials = await reveal(ownerId, authId);
    return credentials ? { ...credentials, server: registryOf(ref) } : undefined;
  };
}

/**
 * gpuNum shares of memoryGBPerGpu; a worker without GPUs gets one share, so that setting a limit leaves no worker
 * unlimited. Whole bytes, as the engine wants them.
 */
export function memoryLimitBytes(gpuCount: number, memoryGBPerGpu: number | undefined): number | undefined {
  if (memoryGBPerGpu === undefined) return undefined;
  return Math.round(Math.max(1, gpuCount) * memoryGBPerGpu * GIB);
}

/** The share of the machine's memory a default limit gives away; the rest is left to the host and Corral. */
export const DEFAULT_MEMORY_SHARE = 0.9;

/**
 * A worker's memory limit per GPU, in GiB: the configured one (0: no limit); unset, each GPU's share of 90% of the
 * machine's memory, so that no worker takes more than its GPUs' part of the host (a machine without GPUs counts
 * as one share). Rounded down to 1/8 GiB so that the number reads well in the log.
 */
export function workerMemoryGBPerGpu(
  configured: number | undefined,
  machineBytes: number,
  gpuCount: number,
): number | undefined {
  if (configured !== undefined) return configured === 0 ? undefined : configured;
  const share = (machineBytes * DEFAULT_MEMORY_SHARE) / Math.max(1, gpuCount) / GIB;
  return Math.max(0.125, Math.floor(share * 8) / 8);
}

/** What a worker runs, from its endpoint and the GPUs placement gave it. Pure. */
export function buildWorkerSpec(
  endpoint: Endpoint,
  worker: ManagedWorker,
  gpus: Gpu[],
  context: WorkerSpecContext,
): WorkerSpec {
  const { spec } = endpoint;
  const gpuList = gpus.map((g) => g.uuid).join(',');
  const env: Record<string, string> = {
    ...Object.fromEntries((context.protocolEnv ?? []).map((e) => [e.key, e.value])),
    // Under the endpoint's envs, which win (docs/models.md): HF_HUB_OFFLINE=0 lets a worker fetch what it did not name.
    ...modelEnv(spec.models),
    ...Object.fromEntries(spec.env.map((e) => [e.key, e.value])),
    PORT: String(spec.port),
    CORRAL_ENDPOINT_ID: endpoint.id,
    CORRAL_WORKER_ID: worker.id,
    // Simulated GPUs have no device to request, but the worker still sees what it was given.
    NVIDIA_VISIBLE_DEVICES: gpuList === '' ? 'void' : gpuList,
  };
  return {
    workerId: worker.id,
    endpointId: endpoint.id,
    ownerId: endpoint.ownerId,
    revision: worker.revision,
    image: spec.image.ref,
    command: splitCommand(spec.image.command),
    env,
    port: spec.port,
    // Simulated GPUs too: the runtime keeps every allocated uuid with the worker (RuntimeWorker.gpuUuids), which
    // is how a restarted controller learns what an adopted worker holds; only real ones become device requests.
    gpus: gpus.map((g) => ({ index: g.index, uuid: g.uuid, ...(g.simulated ? { simulated: true } : {}) })),
    volumes: [
      ...spec.volumes.map((volume, index): RuntimeVolume => {
        if (volume.type === 'local') {
          return {
            type: 'local',
            name: `corral-${worker.id}-${index}`,
            sizeGB: volume.sizeGB,
            mountPath: volume.mountPath,
          };
        }
        const hostPath = context.storagePaths.get(volume.storageId);
        if (hostPath === undefined)
          throw new Error(`network storage "${volume.storageId}" is not configured`);
        const readOnly = context.readOnlyStorages?.has(volume.storageId) === true;
        return { type: 'network', hostPath, mountPath: volume.mountPath, ...(readOnly ? { readOnly } : {}) };
      }),
      ...modelVolumes(spec.models, context.modelHubDir),
    ],
    labels: {
      [LABELS.managed]: 'true',
      [LABELS.endpoint]: endpoint.id,
      [LABELS.worker]: worker.id,
      [LABELS.revision]: String(worker.revision),
      [LABELS.owner]: endpoint.ownerId,
      ...(context.installationId === undefined ? {} : { [LABELS.installation]: context.installationId }),
    },
    ...(context.registryAuth ? { registryAuth: context.registryAuth } : {}),
    rootfsSizeGB: spec.rootfsSizeGB,
    ...memoryLimit(gpus.length, context.memoryGBPerGpu),
    placement: {
      product: context.productId ?? gpus[0]?.productId ?? spec.productIds[0] ?? '',
      gpuNum: spec.workers.gpusPerWorker,
      authId: spec.image.authId,
      ...(spec.image.pullPolicy === undefined ? {} : { pullPolicy: spec.image.pullPolicy }),
      latestTag: floatsOnLatest(spec.image.ref),
    },
  };
}

/** Each named model's repository directory, read-only where the hub's clients look; none without a cache. */
function modelVolumes(models: readonly ModelRef[], hubDir: string | undefined): RuntimeVolume[] {
  if (hubDir === undefined) return [];
  return models.map((model) => {
    const repoDir = modelRepoDir(model.name);
    return {
      type: 'model',
      name: model.name,
      hostPath: path.join(hubDir, repoDir),
      repoDir,
      mountPath: workerModelPath(model.name),
    };
  });
}

function memoryLimit(gpuCount: number, memoryGBPerGpu: number | undefined): { memoryBytes?: number } {
  const bytes = memoryLimitBytes(gpuCount, memoryGBPerGpu);
  return bytes === undefined ? {} : { memoryBytes: bytes };
}

/** What a backslash escapes inside double quotes in a POSIX shell; before any other character it stays literal. */
const ESCAPED_IN_DOUBLE_QUOTES = new Set(['$', '`', '"', '\\', '\n']);

/**
 * Splits `image.command` into argv like a POSIX shell would for words, quotes and backslashes (no expansion):
 * `python serve.py --name "my model"` -> ["python", "serve.py", "--name", "my model"]. Inside double quotes a
 * backslash escapes only $ ` " \ and a newline (`"a\nb"` stays `a\nb`); outside quotes it escapes any character;
 * a backslash before a newline joins the lines (both go).
 */
export function splitCommand(command: string): string[] {
  const words: string[] = [];
  let word = '';
  let inWord = false;
  let quote: '"' | "'" | null = null;
  for (let i = 0; i < command.length; i++) {
    const char = command[i] as string;
    const next = command[i + 1];
    if (char === '\\' && next === '\n' && quote !== "'") {
      i++;
    } else if (quote) {
      if (char === quote) quote = null;
      else if (char === '\\' && quote === '"' && next !== undefined && ESCAPED_IN_DOUBLE_QUOTES.has(next)) {
        word += next;
        i++;
      } else word += char;
    } else if (char === '"' || char === "'") {
      quote = char;
      inWord = true;
    } else if (char === '\\' && next !== undefined) {
      word += next;
      i++;
      inWord = true;
    } else if (/\s/.test(char)) {
      if (inWord) words.push(word);
      word = '';
      inWord = false;
    } else {
      word += char;
      inWord = true;
    }
  }
  if (inWord) words.push(word);
  return words;
}

/** The registry host of an image reference ("" for Docker Hub). */
export function registryOf(image: string): string {
  const first = image.split('/')[0] ?? '';
  return image.includes('/') && (first.includes('.') || first.includes(':') || first === 'localhost')
    ? first
    : '';
}
