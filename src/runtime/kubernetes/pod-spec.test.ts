import { describe, expect, it } from 'vitest';
import { DEFAULT_CAP_ADD } from '../../config/config.js';
import { LABELS, RuntimeError, type WorkerSpec } from '../types.js';
import { isLabelValue } from './names.js';
import type { PodManifest, SecretManifest } from './objects.js';
import {
  DOCKER_HUB_AUTH_KEY,
  POD_ANNOTATIONS,
  POD_LABELS,
  type PodOptions,
  type PodPlacement,
  podSpec,
  pullSecret,
  pullSecretName,
  storageClaimName,
  WORKER_CONTAINER,
  workerEnvSecret,
} from './pod-spec.js';

const GIB = 2 ** 30;

const options: PodOptions = {
  namespace: 'corral-workers',
  namePrefix: 'corral-',
  installationLabels: { [LABELS.installation]: 'inst-abc123' },
  terminationGraceSeconds: 30,
  networkClaims: { '/mnt/models': 'models-rwx' },
};

const placement: PodPlacement = { product: 'h100-80g', gpuNum: 2 };

function spec(overrides: Partial<WorkerSpec> = {}): WorkerSpec {
  return {
    workerId: 'ab12cd34-w0rk3r01',
    endpointId: 'ab12cd34ef56gh78',
    ownerId: 'o1',
    revision: 3,
    image: 'registry.example.com/llm/server:1.2',
    command: [],
    env: {
      MODEL: 'llama',
      PORT: '8000',
      CORRAL_ENDPOINT_ID: 'ab12cd34ef56gh78',
      CORRAL_WORKER_ID: 'ab12cd34-w0rk3r01',
      NVIDIA_VISIBLE_DEVICES: 'void',
    },
    port: 8000,
    gpus: [],
    volumes: [],
    labels: {
      [LABELS.managed]: 'true',
      [LABELS.endpoint]: 'ab12cd34ef56gh78',
      [LABELS.worker]: 'ab12cd34-w0rk3r01',
      [LABELS.revision]: '3',
      [LABELS.owner]: 'o1',
      [LABELS.installation]: 'inst-abc123',
    },
    ...overrides,
  };
}

function worker(pod: PodManifest) {
  const container = pod.spec.containers[0];
  if (!container) throw new Error('no container');
  return container;
}

/** The env the container starts with: values, and the worker env Secret's keys as the kubelet reads them. */
function env(pod: PodManifest, secret?: SecretManifest): Record<string, string | undefined> {
  return Object.fromEntries(
    (worker(pod).env ?? []).map((e) => {
      const ref = e.valueFrom?.secretKeyRef;
      if (!ref) return [e.name, e.value];
      expect(ref.name).toBe(secret?.metadata.name);
      const data = secret?.data?.[ref.key];
      return [e.name, data === undefined ? undefined : Buffer.from(data, 'base64').toString()];
    }),
  );
}

describe('podSpec', () => {
  it('makes one pod per worker in the namespace that is never restarted by the kubelet', () => {
    const pod = podSpec(spec(), placement, options);
    expect(pod).toMatchObject({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'corral-ab12cd34-w0rk3r01', namespace: 'corral-workers' },
      spec: { restartPolicy: 'Never', terminationGracePeriodSeconds: 30 },
    });
    expect(pod.spec.containers).toHaveLength(1);
    expect(worker(pod).name).toBe(WORKER_CONTAINER);
    expect(worker(pod).image).toBe('registry.example.com/llm/server:1.2');
  });

  it('labels the pod with the worker and the installation, Corral labels winning', () => {
    const pod = podSpec(spec({ labels: { [LABELS.worker]: 'stale', team: 'ml' } }), placement, {
      ...options,
      installationLabels: { [LABELS.installation]: 'inst-xyz' },
    });
    expect(pod.metadata.labels).toEqual({
      team: 'ml',
      [LABELS.installation]: 'inst-xyz',
      [LABELS.managed]: 'true',
      [LABELS.endpoint]: 'ab12cd34ef56gh78',
      [LABELS.worker]: 'ab12cd34-w0rk3r01',
      [LABELS.revision]: '3',
      [LABELS.owner]: 'o1',
      [POD_LABELS.product]: 'h100-80g',
    });
    expect(JSON.parse(pod.metadata.annotations[POD_ANNOTATIONS.labels] ?? '')).toEqual({
      team: 'ml',
      [LABELS.installation]: 'inst-xyz',
      [LABELS.managed]: 'true',
      [LABELS.endpoint]: 'ab12cd34ef56gh78',
      [LABELS.worker]: 'ab12cd34-w0rk3r01',
      [LABELS.revision]: '3',
      [LABELS.owner]: 'o1',
    });
  });

  it('folds a label value Kubernetes refuses and keeps the exact one in the annotation', () => {
    const pod = podSpec(spec({ ownerId: 'alice@example.com' }), placement, options);
    const value = pod.metadata.labels[LABELS.owner] ?? '';
    expect(value).not.toBe('alice@example.com');
    expect(isLabelValue(value)).toBe(true);
    expect(JSON.parse(pod.metadata.annotations[POD_ANNOTATIONS.labels] ?? '')[LABELS.owner]).toBe(
      'alice@example.com',
    );
  });

  it('keeps the GPU uuids the controller gave in an annotation', () => {
    const gpus = [
      { index: 0, uuid: 'GPU-aaa' },
      { index: 1, uuid: 'GPU-bbb' },
    ];
    expect(podSpec(spec({ gpus }), placement, options).metadata.annotations[POD_ANNOTATIONS.gpus]).toBe(
      'GPU-aaa,GPU-bbb',
    );
    expect(podSpec(spec(), placement, options).metadata.annotations[POD_ANNOTATIONS.gpus]).toBe('');
  });

  it.each([
    { command: [], args: undefined },
    {
      command: ['python', '-m', 'server', '--port', '8000'],
      args: ['python', '-m', 'server', '--port', '8000'],
    },
    { command: ['sh', '-c', 'echo "a b" && exec app'], args: ['sh', '-c', 'echo "a b" && exec app'] },
  ])('command $command -> args $args, the image ENTRYPOINT kept', ({ command, args }) => {
    const container = worker(podSpec(spec({ command }), placement, options));
    expect(container.args).toEqual(args);
    expect(container.command).toBeUndefined();
  });

  it.each([
    { gpuNum: 2, visible: undefined },
    { gpuNum: 8, visible: undefined },
    { gpuNum: 0, visible: 'void' },
  ])(
    'with $gpuNum GPUs: the endpoint envs, Corral envs, NVIDIA_VISIBLE_DEVICES=$visible',
    ({ gpuNum, visible }) => {
      const workerSpec = spec({
        env: { MODEL: 'llama', PORT: '1', NVIDIA_VISIBLE_DEVICES: 'GPU-simulated-h100-80g-0' },
      });
      const pod = podSpec(workerSpec, { ...placement, gpuNum }, options);
      expect(env(pod, workerEnvSecret(workerSpec, { ...placement, gpuNum }, options))).toEqual({
        MODEL: 'llama',
        PORT: '8000',
        CORRAL_ENDPOINT_ID: 'ab12cd34ef56gh78',
        CORRAL_WORKER_ID: 'ab12cd34-w0rk3r01',
        ...(visible === undefined ? {} : { NVIDIA_VISIBLE_DEVICES: visible }),
      });
    },
  );

  it("puts no env value in the pod's spec but Corral's own; the worker's Secret, named as its pod, holds the rest", () => {
    const workerSpec = spec({
      env: { MODEL: 'llama', RUNPOD_AI_API_KEY: 'token-s3cr3t', HF_TOKEN: 'hf-s3cr3t' },
    });
    const pod = podSpec(workerSpec, placement, options);
    const secret = workerEnvSecret(workerSpec, placement, options);
    expect(JSON.stringify(pod)).not.toContain('s3cr3t');
    expect(
      worker(pod)
        .env?.filter((e) => e.value !== undefined)
        .map((e) => e.name),
    ).toEqual(['PORT', 'CORRAL_ENDPOINT_ID', 'CORRAL_WORKER_ID']);
    expect(secret.metadata).toMatchObject({
      name: pod.metadata.name,
      namespace: 'corral-workers',
      labels: {
        [LABELS.managed]: 'true',
        [LABELS.worker]: 'ab12cd34-w0rk3r01',
        [LABELS.installation]: 'inst-abc123',
      },
    });
    expect(Object.keys(secret.data ?? {}).sort()).toEqual(['HF_TOKEN', 'MODEL', 'RUNPOD_AI_API_KEY']);
    expect(env(pod, secret)).toMatchObject({ RUNPOD_AI_API_KEY: 'token-s3cr3t', HF_TOKEN: 'hf-s3cr3t' });
  });

  it("names the worker's env Secret as the pod's controller, which kubectl drain needs to evict it without --force", () => {
    const pod = podSpec(spec(), placement, options, 'secret-uid-1');
    // kubectl's drain filter (unreplicatedFilter) asks only for an owner reference with controller: true.
    const controllers = pod.metadata.ownerReferences?.filter((o) => o.controller === true);
    expect(controllers).toEqual([
      { apiVersion: 'v1', kind: 'Secret', name: pod.metadata.name, uid: 'secret-uid-1', controller: true },
    ]);
    // No blockOwnerDeletion: it would need update on secrets/finalizers.
    expect(JSON.stringify(pod.metadata.ownerReferences)).not.toContain('blockOwnerDeletion');
    expect(workerEnvSecret(spec(), placement, options).metadata.name).toBe(pod.metadata.name);
    expect(podSpec(spec(), placement, options).metadata.ownerReferences).toBeUndefined();
  });

  it.each([
    // Kubernetes' own default, said explicitly: an image on the node runs unless it floats on latest.
    [{}, {}, 'IfNotPresent'],
    [{ latestTag: true }, {}, 'Always'],
    [{ latestTag: false }, {}, 'IfNotPresent'],
    // The installation's setting applies to every image, latest included.
    [{ latestTag: true }, { imagePullPolicy: 'IfNotPresent' }, 'IfNotPresent'],
    [{ latestTag: false }, { imagePullPolicy: 'Always' }, 'Always'],
    // The endpoint's own wins over both.
    [{ latestTag: true, pullPolicy: 'Never' }, { imagePullPolicy: 'Always' }, 'Never'],
    [{ latestTag: false, pullPolicy: 'Always' }, {}, 'Always'],
  ] as const)('pull policy: placement %o, installation %o -> %s', (wanted, installation, policy) => {
    const pod = podSpec(spec(), { ...placement, ...wanted }, { ...options, ...installation });
    expect(worker(pod).imagePullPolicy).toBe(policy);
  });

  it('exposes the app port', () => {
    expect(worker(podSpec(spec({ port: 7860 }), placement, options)).ports).toEqual([
      { name: 'http', containerPort: 7860, protocol: 'TCP' },
    ]);
  });

  it.each([
    {
      name: 'GPUs and memory per GPU',
      placement: { product: 'h100-80g', gpuNum: 2 },
      extra: { memoryGBPerGpu: 40 },
      worker: {},
      limits: { 'nvidia.com/gpu': '2', memory: '80Gi' },
    },
    {
      name: 'a configured GPU resource name',
      placement: { product: 'mig-1g', gpuNum: 1 },
      extra: { gpuResource: 'nvidia.com/mig-1g.10gb', memoryGBPerGpu: 0.5 },
      worker: {},
      limits: { 'nvidia.com/mig-1g.10gb': '1', memory: '512Mi' },
    },
    {
      name: 'no GPUs: no GPU limit, one share of memory',
      placement: { product: 'cpu', gpuNum: 0 },
      extra: { memoryGBPerGpu: 16 },
      worker: {},
      limits: { memory: '16Gi' },
    },
    {
      name: 'memory per GPU 0: no memory limit',
      placement: { product: 'h100-80g', gpuNum: 1 },
      extra: { memoryGBPerGpu: 0 },
      worker: { memoryBytes: 4 * GIB },
      limits: { 'nvidia.com/gpu': '1' },
    },
    {
      name: 'no memory per GPU: the spec memory',
      placement: { product: 'h100-80g', gpuNum: 1 },
      extra: {},
      worker: { memoryBytes: 12 * GIB },
      limits: { 'nvidia.com/gpu': '1', memory: '12Gi' },
    },
    {
      name: 'rootfs size as ephemeral-storage',
      placement: { product: 'h100-80g', gpuNum: 1 },
      extra: {},
      worker: { rootfsSizeGB: 50 },
      limits: { 'nvidia.com/gpu': '1', 'ephemeral-storage': '50Gi' },
    },
    {
      name: 'ephemeral-storage counts the local volumes too',
      placement: { product: 'h100-80g', gpuNum: 1 },
      extra: {},
      worker: {
        rootfsSizeGB: 50,
        volumes: [
          { type: 'local' as const, name: 'v0', sizeGB: 100, mountPath: '/cache' },
          { type: 'network' as const, hostPath: '/mnt/models', mountPath: '/models' },
          { type: 'local' as const, name: 'v2', sizeGB: 10, mountPath: '/tmp/x' },
        ],
      },
      limits: { 'nvidia.com/gpu': '1', 'ephemeral-storage': '160Gi' },
    },
  ])('limits: $name', ({ placement: place, extra, worker: overrides, limits }) => {
    const pod = podSpec(spec(overrides), place, { ...options, ...extra });
    expect(worker(pod).resources).toEqual({ limits });
  });

  it.each<{ name: string; products: PodOptions['products']; selector: Record<string, string> }>([
    {
      name: 'the default product label, value the product id',
      products: undefined,
      selector: { 'nvidia.com/gpu.product': 'h100-80g' },
    },
    {
      name: 'a mapped value',
      products: { 'h100-80g': { value: 'NVIDIA-H100-80GB-HBM3' } },
      selector: { 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' },
    },
    {
      name: 'a mapped label and value',
      products: { 'h100-80g': { label: 'cloud.example.com/accelerator', value: 'h100' } },
      selector: { 'cloud.example.com/accelerator': 'h100' },
    },
    {
      name: 'another product mapped, this one not',
      products: { 'a100-40g': { value: 'NVIDIA-A100-SXM4-40GB' } },
      selector: { 'nvidia.com/gpu.product': 'h100-80g' },
    },
  ])('node selector: $name', ({ products, selector }) => {
    const pod = podSpec(spec(), placement, { ...options, ...(products ? { products } : {}) });
    expect(pod.spec.nodeSelector).toEqual(selector);
  });

  it('tolerates the GPU taint only when it asks for GPUs', () => {
    expect(podSpec(spec(), placement, options).spec.tolerations).toEqual([
      { key: 'nvidia.com/gpu', operator: 'Exists', effect: 'NoSchedule' },
    ]);
    expect(podSpec(spec(), { ...placement, gpuNum: 0 }, options).spec.tolerations).toBeUndefined();
  });

  it('mounts local volumes as sized emptyDirs and network volumes as their claims', () => {
    const pod = podSpec(
      spec({
        volumes: [
          { type: 'local', name: 'corral-w-0', sizeGB: 100, mountPath: '/cache' },
          { type: 'network', hostPath: '/mnt/models', mountPath: '/models', readOnly: true },
          { type: 'network', hostPath: '/mnt/data', mountPath: '/data' },
          { type: 'local', name: 'corral-w-3', sizeGB: 0.5, mountPath: '/scratch' },
        ],
      }),
      placement,
      { ...options, networkClaims: { '/mnt/models': 'models-rwx', '/mnt/data': 'data' } },
    );
    expect(pod.spec.volumes).toEqual([
      { name: 'volume-0', emptyDir: { sizeLimit: '100Gi' } },
      { name: 'volume-1', persistentVolumeClaim: { claimName: 'models-rwx', readOnly: true } },
      { name: 'volume-2', persistentVolumeClaim: { claimName: 'data' } },
      { name: 'volume-3', emptyDir: { sizeLimit: '512Mi' } },
    ]);
    expect(worker(pod).volumeMounts).toEqual([
      { name: 'volume-0', mountPath: '/cache' },
      { name: 'volume-1', mountPath: '/models', readOnly: true },
      { name: 'volume-2', mountPath: '/data' },
      { name: 'volume-3', mountPath: '/scratch' },
    ]);
  });

  it('has no volumes when the worker has none', () => {
    const pod = podSpec(spec(), placement, options);
    expect(pod.spec.volumes).toBeUndefined();
    expect(worker(pod).volumeMounts).toBeUndefined();
  });

  it('refuses a network volume without a configured claim', () => {
    const build = () =>
      podSpec(
        spec({ volumes: [{ type: 'network', hostPath: '/mnt/unknown', mountPath: '/x' }] }),
        placement,
        options,
      );
    expect(build).toThrow(RuntimeError);
    expect(build).toThrow(/\/mnt\/unknown has no PersistentVolumeClaim/);
  });

  it.each([
    { authId: undefined, secrets: undefined },
    { authId: '', secrets: undefined },
    { authId: 'auth-k3j4h5g6f7d8', secrets: [{ name: 'corral-pull-auth-k3j4h5g6f7d8' }] },
  ])('authId $authId -> imagePullSecrets $secrets', ({ authId, secrets }) => {
    const pod = podSpec(spec(), { ...placement, ...(authId === undefined ? {} : { authId }) }, options);
    expect(pod.spec.imagePullSecrets).toEqual(secrets);
  });

  it('confines the container like the Docker sandbox: all capabilities dropped but the kept ones', () => {
    const pod = podSpec(spec(), placement, { ...options, sandbox: { capAdd: ['CHOWN', 'cap_setuid'] } });
    expect(worker(pod).securityContext).toEqual({
      allowPrivilegeEscalation: false,
      privileged: false,
      capabilities: { drop: ['ALL'], add: ['CHOWN', 'SETUID'] },
      seccompProfile: { type: 'RuntimeDefault' },
    });
    const defaults = podSpec(spec(), placement, { ...options, sandbox: { capAdd: DEFAULT_CAP_ADD } });
    expect(worker(defaults).securityContext?.capabilities?.add).toEqual([...DEFAULT_CAP_ADD]);
  });

  it('leaves the security context to the cluster without a sandbox', () => {
    expect(worker(podSpec(spec(), placement, options)).securityContext).toBeUndefined();
  });

  it('gives the worker no API token and no service links', () => {
    const pod = podSpec(spec(), placement, options);
    expect(pod.spec.automountServiceAccountToken).toBe(false);
    expect(pod.spec.enableServiceLinks).toBe(false);
  });

  it('makes a pod name Kubernetes accepts from any worker id', () => {
    const pod = podSpec(spec({ workerId: 'Odd_Worker.ID' }), placement, options);
    expect(pod.metadata.name).toMatch(/^corral-odd-worker-id-[0-9a-f]{10}$/);
  });

  it('is plain data: the spec is not changed and the pod survives a JSON round trip', () => {
    const input = spec({
      command: ['serve'],
      volumes: [{ type: 'local', name: 'v', sizeGB: 1, mountPath: '/v' }],
    });
    const before = structuredClone({ ...input });
    const pod = podSpec(input, placement, { ...options, sandbox: { capAdd: ['CHOWN'] } });
    expect(input).toEqual(before);
    expect(JSON.parse(JSON.stringify(pod))).toEqual(pod);
  });
});

describe('pullSecret', () => {
  function decode(data: string | undefined): unknown {
    return JSON.parse(Buffer.from(data ?? '', 'base64').toString('utf8'));
  }

  it('holds the credential as a dockerconfigjson for its registry', () => {
    const secret = pullSecret(
      {
        authId: 'auth-k3j4h5g6f7d8',
        ownerId: 'o1',
        auth: { username: 'robot', password: 's3cr:et', server: 'registry.example.com' },
      },
      options,
    );
    expect(secret).toMatchObject({
      apiVersion: 'v1',
      kind: 'Secret',
      type: 'kubernetes.io/dockerconfigjson',
      metadata: {
        name: 'corral-pull-auth-k3j4h5g6f7d8',
        namespace: 'corral-workers',
        labels: {
          [LABELS.installation]: 'inst-abc123',
          [LABELS.managed]: 'true',
          [LABELS.owner]: 'o1',
          [POD_LABELS.credential]: 'auth-k3j4h5g6f7d8',
        },
      },
    });
    expect(Object.keys(secret.data)).toEqual(['.dockerconfigjson']);
    expect(decode(secret.data['.dockerconfigjson'])).toEqual({
      auths: {
        'registry.example.com': {
          username: 'robot',
          password: 's3cr:et',
          auth: Buffer.from('robot:s3cr:et').toString('base64'),
        },
      },
    });
  });

  it("puts Docker Hub's credentials under Docker Hub's key", () => {
    const secret = pullSecret(
      { authId: 'auth-1', ownerId: 'o1', auth: { username: 'u', password: 'p', server: '' } },
      options,
    );
    expect(decode(secret.data['.dockerconfigjson'])).toEqual({
      auths: { [DOCKER_HUB_AUTH_KEY]: { username: 'u', password: 'p', auth: 'dTpw' } },
    });
  });

  it('is named as the pods that use it name it', () => {
    const secret = pullSecret(
      { authId: 'auth-k3j4h5g6f7d8', ownerId: 'o1', auth: { username: 'u', password: 'p', server: 'r.io' } },
      options,
    );
    const pod = podSpec(spec(), { ...placement, authId: 'auth-k3j4h5g6f7d8' }, options);
    expect(pod.spec.imagePullSecrets).toEqual([{ name: secret.metadata.name }]);
    expect(pullSecretName('auth-k3j4h5g6f7d8', options)).toBe(secret.metadata.name);
  });
});

describe('storageClaimName', () => {
  it('names a claim per storage id', () => {
    expect(storageClaimName('models', options)).toBe('corral-storage-models');
    expect(storageClaimName('Models_A', options)).not.toBe(storageClaimName('models-a', options));
  });
});
