/**
 * The manifests of deploy/kubernetes and the Dockerfile, read as a cluster and Docker would read them: every file
 * is applied by the kustomization, Corral runs with the kubernetes runtime as an unprivileged user, and its probes
 * ask the route that answers them.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import {
  KUBERNETES_WORKER_SERVICE,
  kubernetesWorkersUnreachable,
  workerFacingBaseUrl,
} from '../../src/app/worker-facing-url.js';
import { clientApi } from '../../src/runtime/kubernetes/client-api.js';

const ROOT = join(import.meta.dirname, '..', '..');
const DEPLOY = join(ROOT, 'deploy', 'kubernetes');

interface K8sObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string };
  [key: string]: unknown;
}

function objectsOf(file: string): K8sObject[] {
  return parseAllDocuments(readFileSync(join(DEPLOY, file), 'utf8')).map((doc) => {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
    return doc.toJS() as K8sObject;
  });
}

const kustomization = objectsOf('kustomization.yaml')[0] as unknown as { resources: string[] };
const objects = kustomization.resources.flatMap(objectsOf);
const find = (kind: string, name: string) => objects.find((o) => o.kind === kind && o.metadata.name === name);

interface Container {
  name: string;
  args: string[];
  env: {
    name: string;
    value?: string;
    valueFrom?: { secretKeyRef?: { name: string; key: string }; fieldRef?: { fieldPath: string } };
  }[];
  ports: { name: string; containerPort: number }[];
  livenessProbe: { httpGet: { path: string; port: string } };
  readinessProbe: { httpGet: { path: string; port: string } };
  securityContext: Record<string, unknown>;
}

describe('deploy/kubernetes', () => {
  it('applies every manifest in the folder, each object named and namespaced where it must be', () => {
    const files = readdirSync(DEPLOY).filter((f) => f.endsWith('.yaml') && f !== 'kustomization.yaml');
    expect([...kustomization.resources].sort()).toEqual(files.sort());
    const clusterWide = new Set(['Namespace', 'ClusterRole', 'ClusterRoleBinding']);
    for (const object of objects) {
      expect(object.metadata.name, `${object.kind} without a name`).toBeTruthy();
      if (!clusterWide.has(object.kind)) expect(object.metadata.namespace, object.metadata.name).toBeTruthy();
    }
  });

  it('runs corral serve with the kubernetes runtime in the workers namespace, as a non-root user', () => {
    const deployment = find('Deployment', 'corral') as unknown as {
      spec: {
        replicas: number;
        template: { spec: { serviceAccountName: string; securityContext: { runAsNonRoot: boolean } } };
      };
    };
    const pod = deployment.spec.template.spec;
    const [container] = (pod as unknown as { containers: Container[] }).containers;
    expect(container?.args).toEqual(['serve', '--runtime=kubernetes', '--namespace=corral-workers']);
    // Several replicas, each reachable by the others' gateways at its pod's address.
    expect(deployment.spec.replicas).toBeGreaterThan(1);
    const env = (container as unknown as { env: { name: string; value?: string }[] }).env;
    expect(env.find((e) => e.name === 'CORRAL_ADVERTISE_GATEWAY_URL')?.value).toBe('http://$(POD_IP):8000');
    // Queue workers reach the worker-facing listener on the pod network, through the corral-workers Service.
    const setting = (name: string) => env.find((e) => e.name === name)?.value;
    const listen = setting('CORRAL_WORKERS_ADDR');
    const [host = '', port = ''] = (listen ?? '').split(':');
    const advertiseUrl = setting('CORRAL_ADVERTISE_WORKERS_URL');
    expect(
      kubernetesWorkersUnreachable({ listen: { host, port: Number(port) }, advertiseUrl }),
    ).toBeUndefined();
    expect(advertiseUrl).toBe(workerFacingBaseUrl({ runtime: 'kubernetes', ...KUBERNETES_WORKER_SERVICE }));
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(container?.securityContext).toMatchObject({
      allowPrivilegeEscalation: false,
      capabilities: { drop: ['ALL'] },
    });
    expect(find('ServiceAccount', pod.serviceAccountName)?.metadata.namespace).toBe('corral');
    expect(find('Namespace', 'corral-workers')).toBeDefined();
    const secrets = container?.env.flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.name] : []));
    // The cluster's scheduler places workers on its nodes' GPUs: Corral needs no inventory of its own.
    expect(container?.env.map((e) => e.name)).not.toContain('CORRAL_GPUS');
    expect(secrets).toEqual(['CORRAL_DATABASE_URL', 'CORRAL_SECRET_KEY', 'CORRAL_API_KEY']);
  });

  it('probes liveness on /healthz and readiness on /readyz, and its Services reach the API, gateway and workers ports', () => {
    const deployment = find('Deployment', 'corral') as unknown as {
      spec: { template: { spec: { containers: Container[] } } };
    };
    const [container] = deployment.spec.template.spec.containers;
    const portOf = (name: string) => container?.ports.find((p) => p.name === name)?.containerPort;
    expect(portOf('api')).toBe(8080);
    expect(portOf('gateway')).toBe(8000);
    expect(portOf('workers')).toBe(8082);
    expect(container?.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'api' });
    expect(container?.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'api' });
    const targets = objects
      .filter((o) => o.kind === 'Service')
      .flatMap((o) => (o as unknown as { spec: { ports: { targetPort: string }[] } }).spec.ports)
      .map((p) => p.targetPort);
    expect(targets.sort()).toEqual(['api', 'gateway', 'workers']);
  });

  it("puts the corral-workers Service where workers' URLs say (app/worker-facing-url.ts)", () => {
    const service = find('Service', KUBERNETES_WORKER_SERVICE.service) as unknown as {
      metadata: { namespace: string };
      spec: { ports: { port: number; targetPort: string }[] };
    };
    expect(service.metadata.namespace).toBe(KUBERNETES_WORKER_SERVICE.namespace);
    expect(service.spec.ports).toEqual([
      { name: 'workers', port: KUBERNETES_WORKER_SERVICE.port, targetPort: 'workers' },
    ]);
  });

  it('binds the runtime role in the workers namespace to the service account Corral runs as', () => {
    const binding = find('RoleBinding', 'corral-runtime') as unknown as {
      metadata: { namespace: string };
      roleRef: { name: string };
      subjects: { name: string; namespace: string }[];
    };
    expect(binding.metadata.namespace).toBe('corral-workers');
    expect(find('Role', binding.roleRef.name)?.metadata.namespace).toBe('corral-workers');
    expect(binding.subjects).toEqual([{ kind: 'ServiceAccount', name: 'corral', namespace: 'corral' }]);
  });
});

/**
 * The permission each call of the runtime's Kubernetes API needs: a call added to `KubernetesApi` without its
 * entry here fails the test, and so does a verb the manifests grant that no call needs.
 */
const PERMISSIONS: Record<string, { group: string; resource: string; verb: string; clusterWide?: boolean }> =
  {
    createPod: { group: '', resource: 'pods', verb: 'create' },
    deletePod: { group: '', resource: 'pods', verb: 'delete' },
    readPod: { group: '', resource: 'pods', verb: 'get' },
    listPods: { group: '', resource: 'pods', verb: 'list' },
    watchPods: { group: '', resource: 'pods', verb: 'watch' },
    podLog: { group: '', resource: 'pods/log', verb: 'get' },
    podMetrics: { group: 'metrics.k8s.io', resource: 'pods', verb: 'get' },
    createSecret: { group: '', resource: 'secrets', verb: 'create' },
    deleteSecret: { group: '', resource: 'secrets', verb: 'delete' },
    listSecrets: { group: '', resource: 'secrets', verb: 'list' },
    readPersistentVolumeClaim: { group: '', resource: 'persistentvolumeclaims', verb: 'get' },
    listNodes: { group: '', resource: 'nodes', verb: 'list', clusterWide: true },
    watchNodes: { group: '', resource: 'nodes', verb: 'watch', clusterWide: true },
    patchNodeLabels: { group: '', resource: 'nodes', verb: 'patch', clusterWide: true },
  };

interface Rule {
  apiGroups: string[];
  resources: string[];
  verbs: string[];
}

function granted(kind: 'Role' | 'ClusterRole'): Set<string> {
  const rules = objects
    .filter((o) => o.kind === kind)
    .flatMap((o) => (o as unknown as { rules: Rule[] }).rules);
  return new Set(
    rules.flatMap((r) =>
      r.apiGroups.flatMap((g) => r.resources.flatMap((res) => r.verbs.map((v) => `${g}/${res}:${v}`))),
    ),
  );
}

describe('the permissions in deploy/kubernetes/rbac.yaml', () => {
  const config = new KubeConfig();
  config.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  const calls = Object.entries(clientApi(config))
    .filter(([, value]) => typeof value === 'function')
    .map(([name]) => name);

  it('are known for every call the runtime makes', () => {
    expect(calls.filter((call) => PERMISSIONS[call] === undefined)).toEqual([]);
  });

  it('grant exactly what those calls need, namespaced or cluster-wide as they are', () => {
    const needed = (clusterWide: boolean) =>
      new Set(
        calls
          .map((call) => PERMISSIONS[call])
          .filter((p) => p !== undefined && (p.clusterWide ?? false) === clusterWide)
          .map((p) => `${p?.group}/${p?.resource}:${p?.verb}`),
      );
    expect([...granted('Role')].sort()).toEqual([...needed(false)].sort());
    expect([...granted('ClusterRole')].sort()).toEqual([...needed(true)].sort());
  });
});

describe('Dockerfile', () => {
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const finalStage = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));

  it('runs corral serve as the unprivileged node user, with the ports the manifests expose', () => {
    expect(finalStage).toMatch(/^USER node$/m);
    expect(finalStage).toMatch(/^ENTRYPOINT \["node", "\/app\/bin\/corral\.js"\]$/m);
    expect(finalStage).toMatch(/^CMD \["serve"\]$/m);
    expect(finalStage).toMatch(/^EXPOSE 8080 8000$/m);
    expect(finalStage).toContain('CORRAL_API_ADDR=0.0.0.0:8080');
    expect(finalStage).toContain('CORRAL_GATEWAY_ADDR=0.0.0.0:8000');
  });

  it('copies only production dependencies and the build into the image', () => {
    expect(dockerfile).toContain('npm prune --omit=dev');
    expect(finalStage).not.toMatch(/COPY (?!--from=build)/);
  });
});

describe('deploy/kubernetes/node-agent.yaml', () => {
  const daemonSet = find('DaemonSet', 'corral-node') as unknown as {
    metadata: { namespace: string };
    spec: {
      template: {
        spec: {
          hostNetwork: boolean;
          hostPID: boolean;
          automountServiceAccountToken: boolean;
          containers: (Container & { volumeMounts: { name: string; mountPath: string }[] })[];
          volumes: { name: string; hostPath?: { path: string }; secret?: { secretName: string } }[];
        };
      };
    };
  };

  it('runs corral node on every node at the node IP, with the token Secret, the host cgroups and the model cache, and nothing more', async () => {
    const {
      runNodeAgent: _run,
      DEFAULT_NODE_AGENT_PORT,
      DEFAULT_NODE_MODEL_CACHE_DIR,
    } = await import('../../src/app/node-agent.js');
    expect(daemonSet.metadata.namespace).toBe('corral');
    const pod = daemonSet.spec.template.spec;
    expect(pod).toMatchObject({ hostNetwork: true, hostPID: true, automountServiceAccountToken: false });
    const [container] = pod.containers;
    expect(container?.args).toEqual([
      'node',
      '--listen=$(NODE_IP)',
      `--port=${DEFAULT_NODE_AGENT_PORT}`,
      '--token-file=/var/run/secrets/corral-node/token',
      '--cgroup-root=/host/sys/fs/cgroup',
      `--model-cache-dir=${DEFAULT_NODE_MODEL_CACHE_DIR}`,
    ]);
    expect(container?.securityContext).toMatchObject({
      privileged: false,
      allowPrivilegeEscalation: false,
      readOnlyRootFilesystem: true,
      capabilities: { drop: ['ALL'] },
    });
    expect(container?.securityContext).not.toHaveProperty('capabilities.add');
    expect(pod.volumes).toEqual([
      { name: 'cgroup', hostPath: { path: '/sys/fs/cgroup', type: 'Directory' } },
      // The worker pods' hostPath (kubernetes.nodeAgent.modelCacheDir's default), mounted at the same path.
      { name: 'models', hostPath: { path: DEFAULT_NODE_MODEL_CACHE_DIR, type: 'DirectoryOrCreate' } },
      { name: 'token', secret: { secretName: 'corral-node-token', defaultMode: 0o400 } },
    ]);
    expect(container?.volumeMounts).toContainEqual({
      name: 'models',
      mountPath: DEFAULT_NODE_MODEL_CACHE_DIR,
    });
  });
});
