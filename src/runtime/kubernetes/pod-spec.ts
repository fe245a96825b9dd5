/**
 * WorkerSpec -> the Pod that runs the worker, and a registry credential -> the `kubernetes.io/dockerconfigjson`
 * Secret its pods pull with. Pure: no I/O, no clock, no config; tested by tables (docs/kubernetes.md, Pods Corral
 * makes).
 */
import type { WorkerSandbox } from '../../config/config.js';
import {
  type ImagePullPolicy,
  LABEL_PREFIX,
  LABELS,
  type RegistryAuth,
  RuntimeError,
  type WorkerSpec,
  workerLabels,
} from '../types.js';
import { dnsName, isLabelKey, labelValue } from './names.js';
import type {
  Container,
  EnvVar,
  OwnerReference,
  PodManifest,
  PodSpec,
  SecretManifest,
  Toleration,
  Volume,
  VolumeMount,
} from './objects.js';
import { placementAffinity } from './placement-affinity.js';
import { bytesQuantity, gibQuantity } from './quantity.js';

export const DEFAULT_GPU_RESOURCE = 'nvidia.com/gpu';
/** The node label NVIDIA's GPU feature discovery sets to the GPU model, e.g. `NVIDIA-H100-80GB-HBM3`. */
export const DEFAULT_PRODUCT_LABEL = 'nvidia.com/gpu.product';
/** The one container of a worker's pod. */
export const WORKER_CONTAINER = 'worker';

/** Kubernetes-only bookkeeping on a worker's pod; not part of RuntimeWorker.labels. */
export const POD_ANNOTATIONS = {
  /** JSON of the worker's own labels, exactly (a label value Kubernetes refuses is folded on the pod itself). */
  labels: `${LABEL_PREFIX}labels`,
  /** Comma-separated uuids of spec.gpus, given back as RuntimeWorker.gpuUuids. */
  gpus: `${LABEL_PREFIX}gpus`,
} as const;

export const POD_LABELS = {
  /** The product the pod was placed for, so that what Corral's pods request can be counted per product. */
  product: `${LABEL_PREFIX}product`,
  /** On a pull Secret: the credential id it holds. */
  credential: `${LABEL_PREFIX}credential`,
  /** On a worker's env Secret (workerEnvSecret). */
  workerEnv: `${LABEL_PREFIX}worker-env`,
} as const;

/** How a product's nodes are recognised: `label=value` on the node; label default DEFAULT_PRODUCT_LABEL. */
export interface ProductNodeLabel {
  label?: string;
  value: string;
}

/** Settings of the installation, the same for every pod. */
export interface PodOptions {
  namespace: string;
  /** Pod names are `${namePrefix}${workerId}`, pull Secrets `${namePrefix}pull-${authId}`. */
  namePrefix: string;
  /** Labels every object of this installation carries (LABELS.installation); Corral's own worker labels win. */
  installationLabels: Record<string, string>;
  /** The extended resource GPUs are requested as; default DEFAULT_GPU_RESOURCE. */
  gpuResource?: string;
  /** Product id -> the node label that identifies its nodes; a product not here: DEFAULT_PRODUCT_LABEL=product id. */
  products?: Readonly<Record<string, ProductNodeLabel>>;
  /** Memory limit per GPU in GiB (a pod without GPUs gets one share); undefined: spec.memoryBytes, if any. */
  memoryGBPerGpu?: number;
  /** How long a pod has between SIGTERM and SIGKILL when it is deleted (the drain settings). */
  terminationGraceSeconds: number;
  /**
   * Network volumes -> the PersistentVolumeClaim (in the namespace) that holds the storage, keyed by the volume's
   * `hostPath` (the storage's configured path, which is how a WorkerSpec names a storage).
   */
  networkClaims: Readonly<Record<string, string>>;
  /**
   * The installation's image pull policy (config `kubernetes.imagePullPolicy`); an endpoint's own wins. Undefined:
   * Kubernetes' rule, said explicitly (imagePullPolicy).
   */
  imagePullPolicy?: ImagePullPolicy;
  /** Capabilities the worker keeps; every other one is dropped. Undefined: the cluster's defaults. */
  sandbox?: Pick<WorkerSandbox, 'capAdd'>;
  /** The hub cache directory on every node (a hostPath); undefined: the path the WorkerSpec's model volumes name. */
  nodeModelCacheDir?: string;
  /**
   * Whether a pod requires nodes labelled as holding its models (the node agents fill the nodes' caches and label
   * them: a node without the label has an empty hostPath); false: it only prefers them.
   */
  modelNodesRequired?: boolean;
}

/** The node label that says a node's cache holds a model: `models.corral.dev/{models--org--name, folded to fit}`. */
export function modelNodeLabel(repoDir: string): string {
  return `models.${LABEL_PREFIX}${labelValue(repoDir)}`;
}

/**
 * Nodes whose cache holds the pod's models: required where the node agents fill the caches (a node without the
 * model would mount an empty directory), else preferred (the cache is not the nodes', nothing labels them).
 */
function modelAffinity(spec: WorkerSpec, required: boolean): PodSpec['affinity'] | undefined {
  const models = spec.volumes.filter((v) => v.type === 'model');
  if (models.length === 0) return undefined;
  if (required)
    return {
      nodeAffinity: {
        requiredDuringSchedulingIgnoredDuringExecution: {
          nodeSelectorTerms: [
            {
              matchExpressions: models.map((model) => ({
                key: modelNodeLabel(model.repoDir),
                operator: 'Exists',
              })),
            },
          ],
        },
      },
    };
  return {
    nodeAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: models.map((model) => ({
        weight: 50,
        preference: { matchExpressions: [{ key: modelNodeLabel(model.repoDir), operator: 'Exists' }] },
      })),
    },
  };
}

/** What a worker's pod needs that its WorkerSpec does not say: the scheduler places it, not Corral. */
export interface PodPlacement {
  /** The endpoint's product: the pod's node selector. */
  product: string;
  /** GPUs requested from the device plugin. */
  gpuNum: number;
  /** The endpoint's registry credential id; '' or undefined: a public image, no imagePullSecret. */
  authId?: string;
  /** The endpoint's own pull policy, if it has one. */
  pullPolicy?: ImagePullPolicy;
  /** The image floats on `latest` (tag `latest`, or neither tag nor digest). */
  latestTag?: boolean;
}

/**
 * The container's imagePullPolicy: the endpoint's, else the installation's, else Kubernetes' own default made
 * explicit: `Always` for an image that floats on `latest` (a new push must reach new workers), `IfNotPresent` for
 * a fixed tag or a digest (an image already on the node runs without a registry).
 */
export function imagePullPolicy(
  placement: Pick<PodPlacement, 'pullPolicy' | 'latestTag'>,
  options: Pick<PodOptions, 'imagePullPolicy'>,
): ImagePullPolicy {
  return (
    placement.pullPolicy ??
    options.imagePullPolicy ??
    (placement.latestTag === true ? 'Always' : 'IfNotPresent')
  );
}

export function podName(workerId: string, options: Pick<PodOptions, 'namePrefix'>): string {
  return dnsName(options.namePrefix, workerId);
}

/** The Secret that holds a credential's registry login; one per credential id in the namespace. */
export function pullSecretName(authId: string, options: Pick<PodOptions, 'namePrefix'>): string {
  return dnsName(`${options.namePrefix}pull-`, authId);
}

/** A suggested claim name for a network storage without one configured: `${namePrefix}storage-${storageId}`. */
export function storageClaimName(storageId: string, options: Pick<PodOptions, 'namePrefix'>): string {
  return dnsName(`${options.namePrefix}storage-`, storageId);
}

/** The node selector that keeps the pod on its product's nodes. */
export function productSelector(
  product: string,
  options: Pick<PodOptions, 'products'>,
): Record<string, string> {
  const mapped = options.products?.[product];
  return { [mapped?.label ?? DEFAULT_PRODUCT_LABEL]: mapped?.value ?? product };
}

/** Labels as the pod carries them: keys Kubernetes refuses are left to the annotation, values are folded to fit. */
export function podLabels(labels: Record<string, string>): Record<string, string> {
  return Object.fromEntries(
    Object.entries(labels)
      .filter(([key]) => isLabelKey(key))
      .map(([key, value]) => [key, labelValue(value)]),
  );
}

/** Corral's own variables, which say nothing secret: plain values in the pod's spec. */
const PLAIN_ENV = new Set(['PORT', 'CORRAL_ENDPOINT_ID', 'CORRAL_WORKER_ID', 'NVIDIA_VISIBLE_DEVICES']);

/**
 * The endpoint's envs and Corral's, in the spec's order. NVIDIA_VISIBLE_DEVICES is the device plugin's to set for
 * a pod with GPUs (a pod's own env would override the plugin's choice); a pod without GPUs gets `void`, which hides
 * every GPU even on nodes whose container runtime is nvidia by default.
 */
function environment(spec: WorkerSpec, gpuNum: number): Record<string, string> {
  const env: Record<string, string> = {
    ...spec.env,
    PORT: String(spec.port),
    CORRAL_ENDPOINT_ID: spec.endpointId,
    CORRAL_WORKER_ID: spec.workerId,
  };
  delete env.NVIDIA_VISIBLE_DEVICES;
  if (gpuNum === 0) env.NVIDIA_VISIBLE_DEVICES = 'void';
  return env;
}

/**
 * The container's env: Corral's own variables as values; every other one (the endpoint's envs with their secrets
 * resolved, the queue worker's job token) read from the worker's env Secret (workerEnvSecret), so that no value an
 * owner or Corral keeps secret is in the pod's spec, which anyone who may read pods reads.
 */
function containerEnv(env: Record<string, string>, secretName: string): EnvVar[] {
  return Object.entries(env).map(([name, value]) =>
    PLAIN_ENV.has(name)
      ? { name, value }
      : { name, valueFrom: { secretKeyRef: { name: secretName, key: name } } },
  );
}

/** The Secret that holds a worker's env (all but Corral's plain variables); named as its pod. */
export function workerEnvSecretName(workerId: string, options: Pick<PodOptions, 'namePrefix'>): string {
  return podName(workerId, options);
}

/**
 * The Secret of one worker's env values, made before its pod and deleted with it (pod-adapter.ts): named as the
 * pod, labelled as Corral's (managed, the installation, the endpoint and the worker). It holds secrets: never log
 * it. Env names are valid Secret keys (letters, digits and `_`).
 */
export function workerEnvSecret(
  spec: WorkerSpec,
  placement: PodPlacement,
  options: PodOptions,
): SecretManifest {
  const env = environment(spec, placement.gpuNum);
  const data = Object.fromEntries(
    Object.entries(env)
      .filter(([name]) => !PLAIN_ENV.has(name))
      .map(([name, value]) => [name, Buffer.from(value).toString('base64')]),
  );
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: workerEnvSecretName(spec.workerId, options),
      namespace: options.namespace,
      labels: {
        ...podLabels(options.installationLabels),
        [LABELS.managed]: 'true',
        [LABELS.endpoint]: labelValue(spec.endpointId),
        [LABELS.worker]: labelValue(spec.workerId),
        [POD_LABELS.workerEnv]: 'true',
      },
    },
    type: 'Opaque',
    data,
  };
}

function volumes(spec: WorkerSpec, options: PodOptions): { volumes: Volume[]; mounts: VolumeMount[] } {
  const volumes: Volume[] = [];
  const mounts: VolumeMount[] = [];
  spec.volumes.forEach((volume, n) => {
    const name = `volume-${n}`;
    if (volume.type === 'model') {
      const dir = options.nodeModelCacheDir;
      const path = dir === undefined ? volume.hostPath : `${dir.replace(/\/+$/, '')}/${volume.repoDir}`;
      volumes.push({ name, hostPath: { path, type: 'Directory' } });
      mounts.push({ name, mountPath: volume.mountPath, readOnly: true });
      return;
    }
    if (volume.type === 'local') {
      volumes.push({ name, emptyDir: { sizeLimit: gibQuantity(volume.sizeGB) } });
      mounts.push({ name, mountPath: volume.mountPath });
      return;
    }
    const claimName = options.networkClaims[volume.hostPath];
    if (claimName === undefined) {
      throw new RuntimeError(
        'RUNTIME_ERROR',
        `network storage at ${volume.hostPath} has no PersistentVolumeClaim configured for Kubernetes`,
      );
    }
    const readOnly = volume.readOnly === true ? { readOnly: true } : {};
    volumes.push({ name, persistentVolumeClaim: { claimName, ...readOnly } });
    mounts.push({ name, mountPath: volume.mountPath, ...readOnly });
  });
  return { volumes, mounts };
}

/**
 * The container's limits. Requests are left out: Kubernetes makes them equal to the limits, so the scheduler
 * reserves what the worker may use. ephemeral-storage covers the root filesystem and the local volumes: the
 * kubelet evicts a pod whose total use (writable layer, logs and emptyDirs) passes the sum of its containers'
 * limits, so a limit of rootfsSize alone would evict a worker that fills its volumes within their sizeLimit.
 */
function limits(spec: WorkerSpec, placement: PodPlacement, options: PodOptions): Record<string, string> {
  const result: Record<string, string> = {};
  if (placement.gpuNum > 0) result[options.gpuResource ?? DEFAULT_GPU_RESOURCE] = String(placement.gpuNum);
  const memory =
    options.memoryGBPerGpu === undefined
      ? spec.memoryBytes
      : Math.max(1, placement.gpuNum) * options.memoryGBPerGpu * 2 ** 30;
  if (memory !== undefined && memory > 0) result.memory = bytesQuantity(memory);
  if (spec.rootfsSizeGB !== undefined) {
    const local = spec.volumes.reduce((sum, v) => sum + (v.type === 'local' ? v.sizeGB : 0), 0);
    result['ephemeral-storage'] = gibQuantity(spec.rootfsSizeGB + local);
  }
  return result;
}

/** Capabilities in Kubernetes' spelling (no CAP_ prefix). */
function capability(name: string): string {
  return name.toUpperCase().replace(/^CAP_/, '');
}

function securityContext(sandbox: Pick<WorkerSandbox, 'capAdd'>): Container['securityContext'] {
  return {
    // setuid binaries inside the image (su, sudo) gain nothing: Docker's no-new-privileges.
    allowPrivilegeEscalation: false,
    privileged: false,
    capabilities: { drop: ['ALL'], add: sandbox.capAdd.map(capability) },
    // Docker applies its default seccomp profile to every container; Kubernetes only when asked.
    seccompProfile: { type: 'RuntimeDefault' },
  };
}

/** GPU nodes are often tainted `nvidia.com/gpu:NoSchedule` to keep other pods off; a pod that asks for GPUs may go. */
function tolerations(placement: PodPlacement, options: PodOptions): Toleration[] {
  if (placement.gpuNum === 0) return [];
  return [{ key: options.gpuResource ?? DEFAULT_GPU_RESOURCE, operator: 'Exists', effect: 'NoSchedule' }];
}

/**
 * The worker's env Secret as its pod's controller. `kubectl drain` evicts a pod only if it has a controller owner
 * reference (k8s.io/kubectl/pkg/drain/filters.go, unreplicatedFilter: `metav1.GetControllerOf(pod) != nil`; the
 * kind matters only for a DaemonSet), else it refuses the whole drain without `--force`. The Secret is the worker's
 * own object in the pod's namespace (an owner must be in the dependent's namespace: Corral's Deployment is not)
 * and lives exactly as long as the pod (worker-env-secrets.ts): the garbage collector deletes the pod if the
 * Secret is deleted first, which is what Corral wants of a worker whose env is gone. No `blockOwnerDeletion`: it
 * would need `update` on `secrets/finalizers` (the OwnerReferencesPermissionEnforcement admission plugin) for
 * nothing Corral uses; setting an owner reference needs only `delete` on the pod, which Corral has.
 */
export function envSecretOwner(secret: { name: string; uid: string }): OwnerReference {
  return { apiVersion: 'v1', kind: 'Secret', name: secret.name, uid: secret.uid, controller: true };
}

/**
 * The body of `POST /api/v1/namespaces/{namespace}/pods` for one worker; `envSecretUid` (the worker's env Secret as
 * made) makes that Secret the pod's controller (envSecretOwner), so that nodes drain without `--force`.
 */
export function podSpec(
  spec: WorkerSpec,
  placement: PodPlacement,
  options: PodOptions,
  envSecretUid?: string,
): PodManifest {
  const own = workerLabels({ ...spec, labels: { ...spec.labels, ...options.installationLabels } });
  const { volumes: podVolumes, mounts } = volumes(spec, options);
  const toleration = tolerations(placement, options);
  const affinity = {
    ...modelAffinity(spec, options.modelNodesRequired === true),
    ...placementAffinity(spec.endpointId),
  };
  const authId = placement.authId ?? '';
  const container: Container = {
    name: WORKER_CONTAINER,
    image: spec.image,
    imagePullPolicy: imagePullPolicy(placement, options),
    // `image.command` replaces the image's CMD and keeps its ENTRYPOINT, as Docker's Cmd does (`command` would
    // replace the ENTRYPOINT too, and the same endpoint would start differently on the two runtimes).
    ...(spec.command.length > 0 ? { args: [...spec.command] } : {}),
    env: containerEnv(environment(spec, placement.gpuNum), workerEnvSecretName(spec.workerId, options)),
    ports: [{ name: 'http', containerPort: spec.port, protocol: 'TCP' }],
    resources: { limits: limits(spec, placement, options) },
    ...(mounts.length > 0 ? { volumeMounts: mounts } : {}),
    ...(options.sandbox ? { securityContext: securityContext(options.sandbox) } : {}),
  };
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: podName(spec.workerId, options),
      namespace: options.namespace,
      labels: { ...podLabels(own), [POD_LABELS.product]: labelValue(placement.product) },
      annotations: {
        [POD_ANNOTATIONS.labels]: JSON.stringify(own),
        [POD_ANNOTATIONS.gpus]: spec.gpus.map((gpu) => gpu.uuid).join(','),
      },
      ...(envSecretUid === undefined
        ? {}
        : {
            ownerReferences: [
              envSecretOwner({ name: workerEnvSecretName(spec.workerId, options), uid: envSecretUid }),
            ],
          }),
    },
    spec: {
      containers: [container],
      // The controller replaces workers that exit (with its crash-loop backoff); the kubelet must not.
      restartPolicy: 'Never',
      terminationGracePeriodSeconds: options.terminationGraceSeconds,
      // No product (a worker without GPUs, of an endpoint that names none): any node.
      ...(placement.product === '' ? {} : { nodeSelector: productSelector(placement.product, options) }),
      ...(toleration.length > 0 ? { tolerations: toleration } : {}),
      affinity,
      ...(podVolumes.length > 0 ? { volumes: podVolumes } : {}),
      ...(authId === '' ? {} : { imagePullSecrets: [{ name: pullSecretName(authId, options) }] }),
      // A worker is a tenant's code: no token for the cluster's API, no env for every Service in the namespace.
      automountServiceAccountToken: false,
      enableServiceLinks: false,
    },
  };
}

/** Where Docker Hub's credentials go in a docker config (what `docker login` writes for it). */
export const DOCKER_HUB_AUTH_KEY = 'https://index.docker.io/v1/';

/**
 * The `kubernetes.io/dockerconfigjson` Secret for one registry credential: `.dockerconfigjson` holds
 * `{"auths": {registry: {username, password, auth}}}`, base64 like every Secret value. It carries the password:
 * never log it.
 */
export function pullSecret(
  credential: { authId: string; ownerId: string; auth: RegistryAuth },
  options: Pick<PodOptions, 'namespace' | 'namePrefix' | 'installationLabels'>,
): SecretManifest {
  const { username, password, server } = credential.auth;
  const config = {
    auths: {
      [server === '' ? DOCKER_HUB_AUTH_KEY : server]: {
        username,
        password,
        auth: Buffer.from(`${username}:${password}`).toString('base64'),
      },
    },
  };
  return {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: pullSecretName(credential.authId, options),
      namespace: options.namespace,
      labels: {
        ...podLabels(options.installationLabels),
        [LABELS.managed]: 'true',
        [LABELS.owner]: labelValue(credential.ownerId),
        [POD_LABELS.credential]: labelValue(credential.authId),
      },
    },
    type: 'kubernetes.io/dockerconfigjson',
    data: { '.dockerconfigjson': Buffer.from(JSON.stringify(config)).toString('base64') },
  };
}
