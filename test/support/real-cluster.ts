/**
 * A real Kubernetes cluster started by scripts/kube-cluster.sh (kubelets on containerd, the real scheduler,
 * kube-proxy, cluster DNS), and Corral deployed onto it by deploy/kubernetes, as docs/kubernetes.md tells an
 * operator: the images handed to the nodes, a PostgreSQL the pods reach, the Secrets, `kubectl apply -k` of an
 * overlay that names the image (and, for the idle tiers, mounts the node agent's token as the docs say). Used by the
 * opt-in suite test/e2e/real-cluster.test.ts; nothing here runs in CI.
 */
import { execFile, execFileSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { findPodCgroup } from '../../src/node/pod-cgroups.js';
import { cgroupTreePids } from '../../src/runtime/cgroups/cgroup-freezer.js';
import { OwnPostgres } from './own-postgres.js';

export const REPO = fileURLToPath(new URL('../..', import.meta.url));
const CLUSTER_SCRIPT = join(REPO, 'scripts/kube-cluster.sh');
const execFileAsync = promisify(execFile);

/**
 * A command that may take minutes (an image build, a rollout), run without blocking the event loop: a test worker
 * blocked for a minute misses vitest's own messages ("Timeout calling onTaskUpdate").
 */
export async function runLong(
  file: string,
  args: string[],
  env: NodeJS.ProcessEnv = process.env,
): Promise<string> {
  const { stdout } = await execFileAsync(file, args, {
    env,
    timeout: 1_200_000,
    maxBuffer: 64 * 1024 * 1024,
  });
  return stdout;
}

/** The cluster's directory (its kubeconfig inside), or why the suite cannot run here. */
export function realClusterDir(): { dir?: string; skip?: string } {
  const dir = process.env.CORRAL_TEST_KUBE_CLUSTER;
  if (!dir) return { skip: 'set CORRAL_TEST_KUBE_CLUSTER to a cluster scripts/kube-cluster.sh started' };
  if (!existsSync(join(dir, 'kubeconfig'))) return { skip: `no kubeconfig in ${dir}` };
  return { dir };
}

export class RealCluster {
  readonly dir: string;
  readonly operatorKey = randomBytes(24).toString('hex');
  #postgres: OwnPostgres | undefined;
  #overlay: string | undefined;

  constructor(dir: string) {
    this.dir = dir;
  }

  kubectl(args: string[], input?: string): string {
    return execFileSync('kubectl', ['--kubeconfig', join(this.dir, 'kubeconfig'), ...args], {
      encoding: 'utf8',
      stdio: ['pipe', 'pipe', 'pipe'],
      ...(input === undefined ? {} : { input }),
      timeout: 240_000,
    });
  }

  /** kubectl for what may take long (waits, drains, deletes), without blocking the event loop. */
  kubectlLong(args: string[]): Promise<string> {
    return runLong('kubectl', ['--kubeconfig', join(this.dir, 'kubeconfig'), ...args]);
  }

  json(args: string[]): any {
    return JSON.parse(this.kubectl([...args, '-o', 'json']));
  }

  /** The cluster's nodes, by name. */
  nodes(): string[] {
    return this.json(['get', 'nodes']).items.map((node: any) => node.metadata.name as string);
  }

  /** Docker images given to every node's containerd (an image only there, as no registry serves it). */
  async loadImages(images: string[]): Promise<void> {
    await runLong(CLUSTER_SCRIPT, ['images', ...images], { ...process.env, CLUSTER_DIR: this.dir });
  }

  /**
   * Deploys Corral as docs/kubernetes.md says: namespaces, the Secrets (its database, its secret key, an operator
   * key, the node agents' token), then `kubectl apply -k` of an overlay of deploy/kubernetes that names the image and
   * mounts the node agents' token in Corral's pod; waits for the rollout.
   */
  async deploy(options: {
    image: string;
    postgresAddress: string;
    podNetwork: string;
    /** Corral's config file (a ConfigMap named by CORRAL_CONFIG), if the test needs one. */
    configYaml?: string;
    /** Envs of the node agents (the DaemonSet's container), if the test needs any. */
    nodeAgentEnv?: Record<string, string>;
  }): Promise<void> {
    this.#postgres = await OwnPostgres.create({
      address: options.postgresAddress,
      clients: options.podNetwork,
    });
    this.kubectl(['apply', '-f', join(REPO, 'deploy/kubernetes/namespaces.yaml')]);
    // `kubectl create ... --dry-run=client -o yaml | kubectl apply -f -`: made, or updated when it exists.
    const made = (kind: string[], name: string, key: string, value: string) =>
      this.kubectl(
        ['apply', '-f', '-'],
        this.kubectl([
          '-n',
          'corral',
          'create',
          ...kind,
          name,
          `--from-literal=${key}=${value}`,
          '--dry-run=client',
          '-o',
          'yaml',
        ]),
      );
    const secret = (name: string, key: string, value: string) =>
      made(['secret', 'generic'], name, key, value);
    secret('corral-database', 'url', this.#postgres.reachUrl ?? '');
    secret('corral-secret-key', 'key', randomBytes(32).toString('base64'));
    secret('corral-operator-key', 'key', this.operatorKey);
    secret('corral-node-token', 'token', randomBytes(32).toString('hex'));
    const [name, tag] = options.image.split(':');
    this.#overlay = mkdtempSync(join(tmpdir(), 'corral-overlay-'));
    writeFileSync(
      join(this.#overlay, 'kustomization.yaml'),
      `resources:\n  - ${relative(this.#overlay, join(REPO, 'deploy/kubernetes'))}\nimages:\n  - name: corral\n    newName: ${name}\n    newTag: ${tag}\npatches:\n  - path: node-agent-token.yaml\n${options.configYaml ? '  - path: config.yaml\n' : ''}${options.nodeAgentEnv ? '  - path: node-agent-env.yaml\n' : ''}`,
    );
    if (options.configYaml) {
      made(['configmap'], 'corral-config', 'corral.yaml', options.configYaml);
      writeFileSync(
        join(this.#overlay, 'config.yaml'),
        podPatch({
          kind: 'Deployment',
          name: 'corral',
          env: { CORRAL_CONFIG: '/etc/corral/corral.yaml' },
          mount: { name: 'config', path: '/etc/corral', volume: 'configMap: { name: corral-config }' },
        }),
      );
    }
    if (options.nodeAgentEnv) {
      writeFileSync(
        join(this.#overlay, 'node-agent-env.yaml'),
        podPatch({ kind: 'DaemonSet', name: 'corral-node', env: options.nodeAgentEnv }),
      );
    }
    // docs/kubernetes.md, "Turning it on": the Secret mounted in Corral's pod and its file named to Corral.
    writeFileSync(
      join(this.#overlay, 'node-agent-token.yaml'),
      podPatch({
        kind: 'Deployment',
        name: 'corral',
        env: { CORRAL_NODE_AGENT_TOKEN_FILE: '/var/run/secrets/corral-node/token' },
        mount: {
          name: 'node-token',
          path: '/var/run/secrets/corral-node',
          volume: 'secret: { secretName: corral-node-token, defaultMode: 0444 }',
        },
      }),
    );
    this.kubectl(['apply', '-k', this.#overlay]);
    await this.kubectlLong(['-n', 'corral', 'rollout', 'status', 'deployment/corral', '--timeout=240s']);
    await this.kubectlLong(['-n', 'corral', 'rollout', 'status', 'daemonset/corral-node', '--timeout=120s']);
  }

  /** http://{ClusterIP}:{port} of a Service of Corral's (kube-proxy makes it reachable from the host). */
  serviceUrl(name: string): string {
    const service = this.json(['-n', 'corral', 'get', 'service', name]);
    return `http://${service.spec.clusterIP}:${service.spec.ports[0].port}`;
  }

  /** Corral's pods, each with its IP and whether its replica leads (its /readyz says). */
  async replicas(): Promise<{ name: string; ip: string; uid: string; leader: boolean }[]> {
    const pods = this.json(['-n', 'corral', 'get', 'pods', '-l', 'app.kubernetes.io/name=corral']).items;
    const result = [];
    for (const pod of pods) {
      if (!pod.status.podIP || pod.metadata.deletionTimestamp) continue;
      const ready = await fetch(`http://${pod.status.podIP}:8080/readyz`)
        .then((answer) => answer.json() as Promise<{ leader?: boolean }>)
        .catch(() => ({ leader: false }));
      result.push({
        name: pod.metadata.name,
        ip: pod.status.podIP,
        uid: pod.metadata.uid,
        leader: ready.leader === true,
      });
    }
    return result;
  }

  /**
   * `kill -9` of every process of a pod's containers, from the host (through the pod's cgroups, as the kernel
   * sees them): its sandbox stays, so the kubelet restarts the container in the same pod. The PIDs killed.
   */
  killPodProcesses(uid: string): number[] {
    // The node agent's own lookup of a pod's cgroup (any kubelet cgroupRoot), in the freezer hierarchy (cgroup v1).
    const cgroup = findPodCgroup({ kind: 'v1', root: '/sys/fs/cgroup/freezer' }, uid);
    if (!cgroup) throw new Error(`no cgroup of pod ${uid} on this machine`);
    const pids = new Set(cgroupTreePids(cgroup));
    const pause = new Set(
      [...pids].filter((pid) => {
        try {
          return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === 'pause';
        } catch {
          return true;
        }
      }),
    );
    const killed: number[] = [];
    for (const pid of pids) {
      if (pause.has(pid)) continue;
      try {
        process.kill(pid, 'SIGKILL');
        killed.push(pid);
      } catch {
        // Gone already.
      }
    }
    return killed;
  }

  /** When every one of `pids` is gone from /proc (its sockets closed with it), polled every 10 ms. */
  async whenGone(pids: number[], timeoutMs = 10_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    while (pids.some((pid) => existsSync(`/proc/${pid}`))) {
      if (Date.now() > deadline)
        throw new Error(`processes ${pids.join(', ')} still there after ${timeoutMs} ms`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    return Date.now();
  }

  async destroy(): Promise<void> {
    if (this.#overlay) {
      try {
        await this.kubectlLong(['delete', '-k', this.#overlay, '--wait=true', '--timeout=120s']);
      } catch {
        // Already gone, or the cluster is.
      }
      rmSync(this.#overlay, { recursive: true, force: true });
    }
    await this.#postgres?.destroy();
  }
}

/** One HTTP call with a Host header of our choosing (fetch would not let us set it). */
export function httpCall(
  url: string,
  options: { method?: string; host?: string; key?: string; body?: unknown; timeoutMs?: number },
): Promise<{ status: number; headers: Record<string, unknown>; body: string; error?: string }> {
  const target = new URL(url);
  const body = options.body === undefined ? undefined : JSON.stringify(options.body);
  return new Promise((resolve) => {
    const req = request(
      {
        host: target.hostname,
        port: target.port,
        path: `${target.pathname}${target.search}`,
        method: options.method ?? (body === undefined ? 'GET' : 'POST'),
        headers: {
          ...(options.host ? { host: options.host } : {}),
          ...(options.key ? { authorization: `Bearer ${options.key}` } : {}),
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        timeout: options.timeoutMs ?? 60_000,
      },
      (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => {
          text += chunk.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text }));
        res.on('error', (error) => resolve({ status: 0, headers: {}, body: '', error: error.message }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', (error: NodeJS.ErrnoException) =>
      resolve({ status: 0, headers: {}, body: '', error: error.code ?? error.message }),
    );
    req.end(body);
  });
}

/**
 * A kustomize patch (strategic merge) of one of Corral's workloads in the `corral` namespace: envs added to its
 * container (named as the workload), and a volume mounted read-only in it.
 */
function podPatch(patch: {
  kind: 'Deployment' | 'DaemonSet';
  name: string;
  env: Record<string, string>;
  mount?: { name: string; path: string; volume: string };
}): string {
  const { mount } = patch;
  return [
    'apiVersion: apps/v1',
    `kind: ${patch.kind}`,
    `metadata: { name: ${patch.name}, namespace: corral }`,
    'spec:',
    '  template:',
    '    spec:',
    '      containers:',
    `        - name: ${patch.name}`,
    '          env:',
    ...Object.entries(patch.env).map(
      ([key, value]) => `            - { name: ${key}, value: ${JSON.stringify(value)} }`,
    ),
    ...(mount
      ? [
          '          volumeMounts:',
          `            - { name: ${mount.name}, mountPath: ${mount.path}, readOnly: true }`,
          '      volumes:',
          `        - name: ${mount.name}`,
          `          ${mount.volume}`,
        ]
      : []),
    '',
  ].join('\n');
}
