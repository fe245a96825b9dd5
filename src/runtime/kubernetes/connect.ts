/**
 * `--runtime kubernetes`: the cluster of `--kubeconfig` (else the in-cluster service account, else ~/.kube/config)
 * and the runtime on `--namespace`, checked at start: a kubeconfig that cannot be read, or a cluster that cannot be
 * reached or refuses to list the namespace's pods, stops start-up with one line naming the setting. The official
 * client is loaded only here, when this runtime is chosen.
 */

import { readFileSync } from 'node:fs';
import type { Logger } from 'pino';
import { ConfigError, describeSetting } from '../../config/settings.js';
import { DEFAULT_HUB_URL } from '../../domain/model-refs.js';
import type { ImagePullPolicy } from '../types.js';
import { KubernetesRuntime } from './kubernetes-runtime.js';
import { isLabelValue } from './names.js';
import { DEFAULT_NODE_AGENT_PORT, DEFAULT_NODE_MODEL_CACHE_DIR } from './node-agent-protocol.js';
import type { NodeAgentSettings } from './node-agent-tiers.js';
import type { ProductNodeLabel } from './pod-spec.js';

export interface KubernetesSettings {
  kubeconfig?: string;
  namespace: string;
  /**
   * Configured products: `nodeLabel` is `label=value`, or a value of the default label; without it, `gpuModel` is
   * the default label's value (GPU feature discovery's); without either, the product id is.
   */
  products: readonly { id: string; nodeLabel?: string; gpuModel?: string }[];
  /** Configured network storages: each one's claim, keyed by its hostPath (how a WorkerSpec names it). */
  networkStorages: readonly { hostPath: string; claimName?: string }[];
  gpuResource: string;
  terminationGraceSeconds: number;
  /** Every worker's image pull policy unless its endpoint sets one; undefined: by the image's tag. */
  imagePullPolicy?: ImagePullPolicy;
  /** GiB per GPU; undefined or 0: no memory limit (the cluster's LimitRanges apply). */
  memoryGBPerGpu?: number;
  capAdd?: readonly string[];
  /**
   * The node agents that freeze idle pods and fill the GPU nodes' model caches: the token's file, their port,
   * whether to suspend, the nodes' cache directory (default DEFAULT_NODE_MODEL_CACHE_DIR).
   */
  nodeAgent?: {
    tokenFile: string;
    port?: number | undefined;
    suspend?: boolean | undefined;
    modelCacheDir?: string | undefined;
  };
  /** The hub models are checked on (`models.hubUrl`): the agents must fetch from the same one. */
  modelsHubUrl?: string;
  /** The models endpoints name (the store's): sent to the node agents, whose disk budgets never evict them. */
  namedModels?: () => Promise<ReadonlySet<string>>;
}

/** Where the token file is set: the config file, or the setting that overrides it. */
const TOKEN_FILE_SETTING =
  'kubernetes.nodeAgent.tokenFile (--node-agent-token-file, CORRAL_NODE_AGENT_TOKEN_FILE)';

/** The node agents' settings, with the token read from its file (the mounted Secret); a bad file stops start-up. */
function nodeAgentSettings(
  agent: NonNullable<KubernetesSettings['nodeAgent']>,
  hubUrl: string,
): NodeAgentSettings {
  let token: string;
  try {
    token = readFileSync(agent.tokenFile, 'utf8').trim();
  } catch (error) {
    throw new ConfigError(`invalid ${TOKEN_FILE_SETTING}: ${firstLine(error)}`);
  }
  if (token === '') throw new ConfigError(`invalid ${TOKEN_FILE_SETTING}: the file is empty`);
  return {
    token,
    port: agent.port ?? DEFAULT_NODE_AGENT_PORT,
    suspend: agent.suspend ?? false,
    models: { hubDir: agent.modelCacheDir ?? DEFAULT_NODE_MODEL_CACHE_DIR, hubUrl },
  };
}

/** `label=value` -> {label, value}; a bare value is one of the default label (nvidia.com/gpu.product). */
export function productNodeLabel(text: string): ProductNodeLabel {
  const at = text.indexOf('=');
  return at < 0 ? { value: text } : { label: text.slice(0, at), value: text.slice(at + 1) };
}

/**
 * Each configured product's node label: its `nodeLabel`, else its `gpuModel` on the label GPU feature discovery
 * writes, spaces made dashes as GFD makes them (`NVIDIA H100 80GB HBM3` selects
 * `nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3`); a product with neither, or a model that is no label value, is
 * left to the default (`nvidia.com/gpu.product={id}`).
 */
export function productNodeLabels(
  products: KubernetesSettings['products'],
): Record<string, ProductNodeLabel> {
  const labels: Record<string, ProductNodeLabel> = {};
  for (const { id, nodeLabel, gpuModel } of products) {
    if (nodeLabel !== undefined) labels[id] = productNodeLabel(nodeLabel);
    else {
      const model = (gpuModel ?? '').trim().split(/\s+/).join('-');
      if (model !== '' && isLabelValue(model)) labels[id] = { value: model };
    }
  }
  return labels;
}

function firstLine(error: unknown): string {
  return (error instanceof Error ? error.message : String(error)).split('\n')[0] ?? '';
}

/** How long start-up waits for the API server's first answer (one that accepts and never answers included). */
const START_TIMEOUT_MS = 15_000;

export async function connectKubernetes(
  settings: KubernetesSettings,
  context: { logger: Logger; installationId?: string; startTimeoutMs?: number },
): Promise<KubernetesRuntime> {
  const startTimeoutMs = context.startTimeoutMs ?? START_TIMEOUT_MS;
  const { loadKubeConfig, clientApi } = await import('./client-api.js');
  let loaded: ReturnType<typeof loadKubeConfig>;
  try {
    loaded = loadKubeConfig(settings.kubeconfig);
  } catch (error) {
    throw new ConfigError(`invalid ${describeSetting('kubeconfig')}: ${firstLine(error)}`);
  }
  const runtime = new KubernetesRuntime({
    api: clientApi(loaded.config),
    namespace: settings.namespace,
    ...(context.installationId === undefined ? {} : { installationId: context.installationId }),
    logger: context.logger,
    products: settings.products.map((p) => p.id),
    ...(settings.namedModels ? { namedModels: settings.namedModels } : {}),
    ...(settings.nodeAgent === undefined
      ? {}
      : {
          nodeAgent: nodeAgentSettings(settings.nodeAgent, settings.modelsHubUrl ?? DEFAULT_HUB_URL),
        }),
    pods: {
      gpuResource: settings.gpuResource,
      terminationGraceSeconds: settings.terminationGraceSeconds,
      ...(settings.imagePullPolicy === undefined ? {} : { imagePullPolicy: settings.imagePullPolicy }),
      products: productNodeLabels(settings.products),
      networkClaims: Object.fromEntries(
        settings.networkStorages
          .filter((s) => s.claimName !== undefined)
          .map((s) => [s.hostPath, s.claimName ?? '']),
      ),
      memoryGBPerGpu: settings.memoryGBPerGpu ?? 0,
      ...(settings.capAdd ? { sandbox: { capAdd: [...settings.capAdd] } } : {}),
    },
  });
  let timer: NodeJS.Timeout | undefined;
  const silent = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`the API server gave no answer within ${startTimeoutMs / 1000} s`)),
      startTimeoutMs,
    );
  });
  try {
    await Promise.race([runtime.start(), silent]);
  } catch (error) {
    await runtime.close();
    throw new ConfigError(
      `cannot use the Kubernetes cluster of ${describeSetting('kubeconfig')} (${loaded.server}, namespace ` +
        `${settings.namespace}): ${firstLine(error)}`,
    );
  } finally {
    clearTimeout(timer);
  }
  context.logger.info(
    { server: loaded.server, kubeconfig: loaded.source, namespace: settings.namespace },
    'kubernetes runtime: watching the namespace',
  );
  return runtime;
}
