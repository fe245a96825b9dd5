/**
 * KubernetesApi over the official client (@kubernetes/client-node 1.4, the last line that runs on Node 20): the
 * calls the runtime makes, their failures turned into KubernetesApiError, and the kubeconfig found as kubectl finds
 * it (an explicit file, else the in-cluster service account, else ~/.kube/config). I/O only.
 */
import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import {
  ApiException,
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  Log,
  PatchStrategy,
  setHeaderOptions,
  type V1Pod,
  type V1Secret,
  Watch,
} from '@kubernetes/client-node';
import {
  type ApiStatus,
  type KubernetesApi,
  KubernetesApiError,
  type Node,
  type ObjectList,
  type PersistentVolumeClaim,
  type PodLogOptions,
  type PodMetrics,
  type WatchEvent,
} from './api.js';
import type { Pod, Secret } from './objects.js';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

/** Where the kubeconfig came from, for the start-up line. */
export type KubeConfigSource = 'file' | 'in-cluster' | 'home';

/**
 * The cluster's address and credentials: `path` when given, else the in-cluster service account (a pod with
 * KUBERNETES_SERVICE_HOST and a mounted token), else ~/.kube/config. Throws when none is there or it cannot be read.
 */
export function loadKubeConfig(
  path?: string,
  env: NodeJS.ProcessEnv = process.env,
): { config: KubeConfig; source: KubeConfigSource; server: string } {
  const config = new KubeConfig();
  let source: KubeConfigSource;
  if (path !== undefined && path !== '') {
    if (!existsSync(path)) throw new Error(`no kubeconfig at ${path}`);
    config.loadFromFile(path);
    source = 'file';
  } else if (env.KUBERNETES_SERVICE_HOST && existsSync(SERVICE_ACCOUNT_TOKEN)) {
    config.loadFromCluster();
    source = 'in-cluster';
  } else {
    const home = join(env.HOME ?? homedir(), '.kube', 'config');
    if (!existsSync(home)) {
      throw new Error(`no kubeconfig: not in a cluster (no service account token) and no ${home}`);
    }
    config.loadFromFile(home);
    source = 'home';
  }
  const cluster = config.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig names no current cluster');
  return { config, source, server: cluster.server };
}

/** Transport failures: no HTTP answer came. */
const TRANSPORT_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EPIPE',
  'ENOENT',
  'UND_ERR_SOCKET',
  'UND_ERR_CONNECT_TIMEOUT',
]);

function parseStatus(body: unknown): ApiStatus | undefined {
  let value: unknown = body;
  if (typeof body === 'string') {
    try {
      value = JSON.parse(body);
    } catch {
      return body.trim() === '' ? undefined : { message: body.trim() };
    }
  }
  if (value === null || typeof value !== 'object') return undefined;
  const status = value as ApiStatus;
  return { code: status.code, reason: status.reason, message: status.message };
}

/** Anything a client call threw -> KubernetesApiError. */
export function apiError(error: unknown, what: string): KubernetesApiError {
  if (error instanceof KubernetesApiError) return error;
  if (error instanceof ApiException) {
    const status = parseStatus(error.body);
    const code = error.code;
    const text = status?.message ?? (code === 401 ? 'Unauthorized' : `HTTP ${code}`);
    return new KubernetesApiError(`${what}: ${text}`, code, status?.reason ?? '', false, { cause: error });
  }
  const failure = error as {
    code?: string;
    type?: string;
    name?: string;
    message?: string;
    statusCode?: number;
  };
  if (typeof failure?.statusCode === 'number') {
    return new KubernetesApiError(
      `${what}: ${failure.message ?? `HTTP ${failure.statusCode}`}`,
      failure.statusCode,
      '',
      false,
      { cause: error },
    );
  }
  const unreachable =
    (failure?.code !== undefined && TRANSPORT_CODES.has(failure.code)) ||
    failure?.type === 'system' ||
    failure?.name === 'TimeoutError' ||
    failure?.name === 'FetchError';
  const message = failure?.message ?? String(error);
  return new KubernetesApiError(`${what}: ${message}`, undefined, '', unreachable, { cause: error });
}

async function call<T>(what: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    throw apiError(error, what);
  }
}

function listOf<T>(list: { items: unknown[]; metadata?: { resourceVersion?: string } }): ObjectList<T> {
  return { items: list.items as T[], resourceVersion: list.metadata?.resourceVersion ?? '' };
}

function watchEvent<T>(type: string, object: unknown): WatchEvent<T> | undefined {
  if (type === 'ADDED' || type === 'MODIFIED' || type === 'DELETED') return { type, object: object as T };
  if (type === 'BOOKMARK') {
    const version = (object as { metadata?: { resourceVersion?: string } })?.metadata?.resourceVersion ?? '';
    return { type, resourceVersion: version };
  }
  if (type === 'ERROR') return { type, status: parseStatus(object) ?? {} };
  return undefined;
}

/** The KubernetesApi of the cluster the kubeconfig names. */
export function clientApi(config: KubeConfig): KubernetesApi {
  const core = config.makeApiClient(CoreV1Api);
  const custom = config.makeApiClient(CustomObjectsApi);
  const server = config.getCurrentCluster()?.server ?? '(no cluster)';
  return {
    server,
    createPod: (namespace, pod) =>
      call('cannot create the pod', async () => {
        const created = await core.createNamespacedPod({ namespace, body: pod as unknown as V1Pod });
        return created as unknown as Pod;
      }),
    deletePod: (namespace, name, graceSeconds) =>
      call(`cannot delete pod ${name}`, async () => {
        await core.deleteNamespacedPod({ namespace, name, gracePeriodSeconds: graceSeconds });
      }),
    readPod: (namespace, name) =>
      call(`cannot read pod ${name}`, async () => (await core.readNamespacedPod({ namespace, name })) as Pod),
    listPods: (namespace, selector) =>
      call('cannot list pods', async () =>
        listOf<Pod>(await core.listNamespacedPod({ namespace, labelSelector: selector })),
      ),
    watchPods: (namespace, options, onEvent, onEnd) =>
      watch<Pod>(
        config,
        `/api/v1/namespaces/${encodeURIComponent(namespace)}/pods`,
        { labelSelector: options.labelSelector, resourceVersion: options.resourceVersion },
        { what: 'the pod watch failed', signal: options.signal, onEvent, onEnd },
      ),
    podLog: async (namespace, name, options: PodLogOptions) => {
      const stream = new PassThrough();
      const controller = await call(`cannot read the log of pod ${name}`, () =>
        new Log(config).log(namespace, name, options.container, stream, {
          follow: options.follow,
          ...(options.tailLines === undefined ? {} : { tailLines: options.tailLines }),
        }),
      );
      const stop = () => {
        controller.abort();
        stream.end();
      };
      if (options.signal?.aborted) stop();
      else options.signal?.addEventListener('abort', stop, { once: true });
      return stream;
    },
    podMetrics: (namespace, name) =>
      call(`cannot read the metrics of pod ${name}`, async () => {
        const metrics = (await custom.getNamespacedCustomObject({
          group: 'metrics.k8s.io',
          version: 'v1beta1',
          namespace,
          plural: 'pods',
          name,
        })) as PodMetrics;
        return { containers: metrics.containers ?? [] };
      }),
    createSecret: (namespace, secret) =>
      call('cannot create a pull Secret', async () => {
        const created = await core.createNamespacedSecret({ namespace, body: secret as unknown as V1Secret });
        return created as unknown as Secret;
      }),
    deleteSecret: (namespace, name) =>
      call(`cannot delete Secret ${name}`, async () => {
        await core.deleteNamespacedSecret({ namespace, name });
      }),
    listSecrets: (namespace, selector) =>
      call('cannot list pull Secrets', async () =>
        listOf<Secret>(await core.listNamespacedSecret({ namespace, labelSelector: selector })),
      ),
    readPersistentVolumeClaim: (namespace, name) =>
      call(`cannot read PersistentVolumeClaim ${name}`, async () => {
        return (await core.readNamespacedPersistentVolumeClaim({ namespace, name })) as PersistentVolumeClaim;
      }),
    listNodes: (selector) =>
      call('cannot list nodes', async () =>
        listOf<Node>(await core.listNode(selector === undefined ? {} : { labelSelector: selector })),
      ),
    patchNodeLabels: (name, labels) =>
      call(`cannot label node ${name}`, async () => {
        await core.patchNode(
          { name, body: { metadata: { labels } } },
          setHeaderOptions('Content-Type', PatchStrategy.MergePatch),
        );
      }),
    watchNodes: (options, onEvent, onEnd) =>
      watch<Node>(
        config,
        '/api/v1/nodes',
        { resourceVersion: options.resourceVersion },
        { what: 'the node watch failed', signal: options.signal, onEvent, onEnd },
      ),
  };
}

/** One watch stream (with bookmarks): resolves once open; `onEnd` once when it ends or fails, not after an abort. */
async function watch<T>(
  config: KubeConfig,
  path: string,
  query: Record<string, string>,
  o: {
    what: string;
    signal: AbortSignal;
    onEvent: (event: WatchEvent<T>) => void;
    onEnd: (error: unknown) => void;
  },
): Promise<void> {
  const { signal } = o;
  let ended = false;
  const end = (error: unknown) => {
    if (ended || signal.aborted) return;
    ended = true;
    o.onEnd(error === null || error === undefined ? undefined : apiError(error, o.what));
  };
  const controller = await new Watch(config)
    .watch(
      path,
      { ...query, allowWatchBookmarks: true },
      (type: string, object: unknown) => {
        if (ended || signal.aborted) return;
        const event = watchEvent<T>(type, object);
        if (event) o.onEvent(event);
      },
      end,
    )
    .catch((error: unknown) => {
      end(error);
      return undefined;
    });
  if (!controller) return;
  if (signal.aborted) controller.abort();
  else signal.addEventListener('abort', () => controller.abort(), { once: true });
}
