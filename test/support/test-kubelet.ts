/**
 * The test plays the kubelet for the Kubernetes runtime, against the stand-in or a real API server: it binds each
 * new pod of its selector to a node, starts the test worker as a process on the pod's own loopback address
 * (127.0.0.N, the pod IP) with the pod's env, and reports through `pods/status` (running, ErrImagePull for an image
 * it is told is missing, terminated with the exit code); a deleted pod's process gets SIGTERM, SIGKILL after the
 * grace period, and the deletion is confirmed with a delete of grace 0 (a pod deleted at once has its process killed). Output and usage go to the stand-in's
 * pods/log and metrics where there is one. With `scheduleOnNodes` it plays the scheduler on the cluster's nodes
 * too: a pod goes to the first schedulable node its node selector matches with enough of the GPU resource left
 * (allocatable less what the pods bound there hold), or stays unscheduled with the scheduler's message; it does not
 * try an unscheduled pod again. With `podCgroups` each pod's process is moved into a cgroup laid out as the kubelet
 * lays it out (pod-cgroups.ts), for the node agent to freeze.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import type { PodHierarchy } from '../../src/node/pod-cgroups.js';
import type { KubernetesApi, Node } from '../../src/runtime/kubernetes/api.js';
import type { Container, Pod } from '../../src/runtime/kubernetes/objects.js';
import { PodView } from '../../src/runtime/kubernetes/pod-view.js';
import { parseQuantity } from '../../src/runtime/kubernetes/quantity.js';
import { CLOCK_TICKS, readProcStat, readRssBytes } from '../../src/runtime/local/proc.js';
import type { KubeStandIn } from './kube-stand-in.js';
import { type KubeletDriver, placeInPodCgroup } from './pod-cgroups.js';
import { WORKER_SCRIPT } from './test-image.js';

export interface TestKubeletOptions {
  api: KubernetesApi;
  config: KubeConfig;
  namespace: string;
  labelSelector: string;
  /** Images the kubelet cannot pull (ErrImagePull). */
  missingImages: ReadonlySet<string>;
  standIn?: KubeStandIn;
  nodeName?: string;
  /**
   * Plays the scheduler too: a pod whose node selector asks for one of these products stays unscheduled, with the
   * message as the scheduler writes it (`0/3 nodes are available: 3 Insufficient nvidia.com/gpu.`).
   */
  unschedulable?: ReadonlyMap<string, string>;
  /** Plays the scheduler on the cluster's nodes (listed at each placement), counting this GPU resource. */
  scheduleOnNodes?: { gpuResource: string };
  /** Each pod's process moved into its pod's cgroup in this (test-owned) hierarchy, as this driver names it. */
  podCgroups?: { hierarchy: PodHierarchy; driver: KubeletDriver };
}

/** The GPUs (of `resource`) a pod's containers ask for. */
function gpusOf(pod: Pod, resource: string): number {
  let total = 0;
  for (const c of pod.spec?.containers ?? [])
    total += parseQuantity(c.resources?.limits?.[resource] ?? '0') ?? 0;
  return total;
}

/**
 * Where the scheduler would put the pod among `nodes`, given what `bound` pods hold: a node name, or the message it
 * writes on the pod (`0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2 node(s) didn't match Pod's node
 * affinity/selector.`).
 */
export function scheduleOn(
  pod: Pod,
  nodes: readonly Node[],
  bound: readonly Pod[],
  resource: string,
): { node: string } | { message: string } {
  const need = gpusOf(pod, resource);
  const reasons = new Map<string, number>();
  const refuse = (reason: string) => reasons.set(reason, (reasons.get(reason) ?? 0) + 1);
  for (const node of nodes) {
    const name = node.metadata?.name ?? '';
    if (node.spec?.unschedulable) {
      refuse('node(s) were unschedulable');
      continue;
    }
    const selector = Object.entries(pod.spec?.nodeSelector ?? {});
    if (!selector.every(([key, value]) => node.metadata?.labels?.[key] === value)) {
      refuse("node(s) didn't match Pod's node affinity/selector");
      continue;
    }
    const allocatable = parseQuantity(node.status?.allocatable?.[resource] ?? '0') ?? 0;
    const held = bound
      .filter((p) => p.spec?.nodeName === name && !['Succeeded', 'Failed'].includes(p.status?.phase ?? ''))
      .reduce((sum, p) => sum + gpusOf(p, resource), 0);
    if (need > 0 && allocatable - held < need) {
      refuse(`Insufficient ${resource}`);
      continue;
    }
    return { node: name };
  }
  const why = [...reasons]
    .map(([reason, n]) => `${n} ${reason}`)
    .sort()
    .join(', ');
  return { message: `0/${nodes.length} nodes are available: ${why}.` };
}

interface Running {
  child: ChildProcess;
  ip: string;
  startedAt: number;
  deleting: boolean;
  exited: boolean;
  /** The pod is gone from the API server: no status is written for it. */
  gone?: boolean;
}

let nextAddress = 2;

/** 127.0.0.2, 127.0.0.3, ...: each pod its own loopback address, so that every worker listens on the app port. */
function loopbackAddress(): string {
  const n = nextAddress++;
  return `127.0.${Math.floor(n / 250)}.${(n % 250) + 2}`;
}

export class TestKubelet {
  readonly #o: TestKubeletOptions;
  readonly #view: PodView;
  readonly #running = new Map<string, Running>();
  readonly #handled = new Set<string>();
  readonly #node: string;
  /** Pods this scheduler bound whose binding the watch may not show yet. */
  #placed: Pod[] = [];
  /** One placement at a time, so that two pods never take the same free GPUs. */
  #scheduling = Promise.resolve();

  constructor(options: TestKubeletOptions) {
    this.#o = options;
    this.#node = options.nodeName ?? 'test-node-1';
    this.#view = new PodView({
      api: options.api,
      namespace: options.namespace,
      labelSelector: options.labelSelector,
      logger: pino({ level: 'silent' }),
      backoff: { initialMs: 50, maxMs: 500 },
      onChange: (before, after) => {
        if (after) void this.#reconcile(after).catch((error: unknown) => this.#failed(error));
        else if (before) this.#gone(before);
      },
    });
  }

  async start(): Promise<void> {
    await this.#view.sync();
  }

  /**
   * What the kubelet could not do (a binding or status write the API server refused): said on stderr and kept, so
   * that a pod left Pending says why (a refused binding once hid behind every pod staying Pending).
   */
  readonly failures: string[] = [];

  #failed(error: unknown): void {
    const message = error instanceof Error ? error.message : String(error);
    if (this.failures.length < 100) this.failures.push(message);
    this.#logger.warn({ err: message }, 'the test kubelet could not write a pod');
  }

  readonly #logger = pino({ level: 'warn' }, pino.destination(2));

  async stop(): Promise<void> {
    this.#view.close();
    for (const running of this.#running.values()) running.child.kill('SIGKILL');
    this.#running.clear();
  }

  /** Plays the scheduler once room is made: binds a pod it left unscheduled to `node` (then runs it there). */
  async bind(name: string, node: string): Promise<void> {
    await this.#raw('POST', `/api/v1/namespaces/${this.#o.namespace}/pods/${name}/binding`, {
      apiVersion: 'v1',
      kind: 'Binding',
      metadata: { name },
      target: { apiVersion: 'v1', kind: 'Node', name: node },
    });
  }

  /**
   * A pod removed at once (a delete of grace 0, which a Corral makes of a pod that failed or a pre-pull pod): as a
   * kubelet, its process is killed, not left running.
   */
  #gone(pod: Pod): void {
    const uid = pod.metadata?.uid ?? '';
    const running = this.#running.get(uid);
    if (!running) return;
    this.#running.delete(uid);
    running.gone = true;
    if (!running.exited) running.child.kill('SIGKILL');
  }

  async #reconcile(pod: Pod): Promise<void> {
    const name = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    const running = this.#running.get(uid);
    if (pod.metadata?.deletionTimestamp !== undefined) {
      if (running && !running.deleting) {
        running.deleting = true;
        const grace = pod.metadata.deletionGracePeriodSeconds ?? 30;
        running.child.kill('SIGTERM');
        const timer = setTimeout(() => running.child.kill('SIGKILL'), grace * 1000);
        running.child.once('exit', () => {
          clearTimeout(timer);
          void this.#o.api.deletePod(this.#o.namespace, name, 0).catch(() => undefined);
        });
        if (running.exited) running.child.emit('exit');
      } else if (!running && !this.#handled.has(`${uid}/deleted`)) {
        this.#handled.add(`${uid}/deleted`);
        await this.#o.api.deletePod(this.#o.namespace, name, 0).catch(() => undefined);
      }
      return;
    }
    if (!pod.spec?.nodeName) {
      if (this.#handled.has(`${uid}/bound`)) return;
      this.#handled.add(`${uid}/bound`);
      const wanted = Object.values(pod.spec?.nodeSelector ?? {});
      let refusal = wanted.map((product) => this.#o.unschedulable?.get(product)).find((m) => m !== undefined);
      let node = this.#node;
      const scheduler = this.#o.scheduleOnNodes;
      if (refusal === undefined && scheduler) {
        const placed = this.#scheduling.then(async () => {
          const nodes = (await this.#o.api.listNodes()).items;
          const current = [...this.#view.current().values()];
          const bound = current.filter((p) => p.spec?.nodeName);
          // Bound by this scheduler, the binding not seen yet; a pod gone or seen bound is counted from the view.
          const unseen = new Set(current.filter((p) => !p.spec?.nodeName).map((p) => p.metadata?.uid));
          this.#placed = this.#placed.filter((p) => unseen.has(p.metadata?.uid));
          const result = scheduleOn(pod, nodes, [...bound, ...this.#placed], scheduler.gpuResource);
          if ('node' in result) {
            this.#placed.push({
              ...pod,
              spec: { ...(pod.spec ?? { containers: [] }), nodeName: result.node },
            });
          }
          return result;
        });
        this.#scheduling = placed.then(
          () => undefined,
          () => undefined,
        );
        const result = await placed;
        if ('node' in result) node = result.node;
        else refusal = result.message;
      }
      if (refusal !== undefined) {
        await this.#status(name, {
          phase: 'Pending',
          conditions: [
            {
              type: 'PodScheduled',
              status: 'False',
              reason: 'Unschedulable',
              message: refusal,
              lastProbeTime: null,
              lastTransitionTime: new Date().toISOString(),
            },
          ],
        });
        return;
      }
      await this.bind(name, node);
      return;
    }
    if (this.#handled.has(`${uid}/started`)) return;
    this.#handled.add(`${uid}/started`);
    const container = pod.spec.containers[0];
    const image = container?.image ?? '';
    if (this.#o.missingImages.has(image)) {
      await this.#waiting(
        name,
        container,
        'ErrImagePull',
        `failed to pull and unpack image "${image}": not found`,
      );
      return;
    }
    const env = await this.#env(pod);
    if (typeof env === 'string') {
      // As a kubelet says a Secret the env names that is not there; it tries again, this one does not.
      await this.#waiting(name, container, 'CreateContainerConfigError', env);
      return;
    }
    this.#startProcess(pod, env);
  }

  /** A pod left Pending with its container waiting, as a kubelet reports one it cannot start. */
  async #waiting(
    name: string,
    container: Container | undefined,
    reason: string,
    message: string,
  ): Promise<void> {
    await this.#status(name, {
      phase: 'Pending',
      containerStatuses: [
        {
          name: container?.name ?? 'worker',
          image: container?.image ?? '',
          imageID: '',
          ready: false,
          restartCount: 0,
          started: false,
          state: { waiting: { reason, message } },
        },
      ],
    });
  }

  /** The container's env as a kubelet makes it: values, and Secrets' keys read now; a missing one says so. */
  async #env(pod: Pod): Promise<Record<string, string> | string> {
    const env: Record<string, string> = {};
    let secrets: Map<string, Record<string, string>> | undefined;
    for (const variable of pod.spec?.containers[0]?.env ?? []) {
      const ref = variable.valueFrom?.secretKeyRef;
      if (!ref) {
        env[variable.name] = variable.value ?? '';
        continue;
      }
      secrets ??= new Map(
        (await this.#o.api.listSecrets(this.#o.namespace, '')).items.map((s) => [
          s.metadata?.name ?? '',
          s.data ?? {},
        ]),
      );
      const value = secrets.get(ref.name)?.[ref.key];
      if (value === undefined) return `secret "${ref.name}" not found`;
      env[variable.name] = Buffer.from(value, 'base64').toString();
    }
    return env;
  }

  #startProcess(pod: Pod, podEnv: Record<string, string>): void {
    const name = pod.metadata?.name ?? '';
    const uid = pod.metadata?.uid ?? '';
    const container = pod.spec?.containers[0];
    const ip = loopbackAddress();
    const env: Record<string, string> = { PATH: process.env.PATH ?? '', HOST: ip, ...podEnv };
    const child = spawn(process.execPath, [WORKER_SCRIPT, ...(container?.args ?? [])], {
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const cgroups = this.#o.podCgroups;
    if (cgroups && child.pid !== undefined)
      placeInPodCgroup(cgroups.hierarchy, { driver: cgroups.driver, qos: 'burstable', uid }, child.pid);
    const running: Running = { child, ip, startedAt: Date.now(), deleting: false, exited: false };
    this.#running.set(uid, running);
    const log = (chunk: Buffer) => this.#o.standIn?.appendLog(this.#o.namespace, name, chunk.toString());
    child.stdout?.on('data', log);
    child.stderr?.on('data', log);
    const now = new Date().toISOString();
    const status = {
      name: container?.name ?? 'worker',
      image: container?.image ?? '',
      imageID: `${container?.image ?? ''}@sha256:0`,
      containerID: `test://${child.pid}`,
    };
    void this.#status(name, {
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      hostIP: '127.0.0.1',
      startTime: now,
      containerStatuses: [
        { ...status, ready: true, restartCount: 0, started: true, state: { running: { startedAt: now } } },
      ],
    }).catch((error: unknown) => this.#failed(error));
    const metrics = setInterval(() => this.#metrics(name, running), 200);
    this.#metrics(name, running);
    child.once('exit', (code, signal) => {
      running.exited = true;
      clearInterval(metrics);
      if (running.gone) return;
      const exitCode = code ?? 128 + signalNumber(signal);
      void this.#status(name, {
        phase: exitCode === 0 ? 'Succeeded' : 'Failed',
        containerStatuses: [
          {
            ...status,
            ready: false,
            restartCount: 0,
            started: false,
            state: {
              terminated: {
                exitCode,
                reason: exitCode === 0 ? 'Completed' : 'Error',
                startedAt: now,
                finishedAt: new Date().toISOString(),
                containerID: status.containerID,
              },
            },
          },
        ],
      }).catch((error: unknown) => this.#failed(error));
    });
  }

  #metrics(name: string, running: Running): void {
    const { child } = running;
    const standIn = this.#o.standIn;
    if (!standIn || child.pid === undefined) return;
    const stat = readProcStat(child.pid);
    const rss = readRssBytes(child.pid);
    if (!stat || rss === undefined) return;
    const cores = stat.cpuTicks / CLOCK_TICKS / Math.max(0.001, (Date.now() - running.startedAt) / 1000);
    standIn.setMetrics(this.#o.namespace, name, {
      containers: [{ name: 'worker', usage: { cpu: `${Math.round(cores * 1e9)}n`, memory: `${rss}` } }],
    });
  }

  async #status(name: string, status: Record<string, unknown>): Promise<void> {
    await this.#raw(
      'PATCH',
      `/api/v1/namespaces/${this.#o.namespace}/pods/${name}/status`,
      { status },
      'application/merge-patch+json',
    );
  }

  /** A request with the kubeconfig's credentials (the calls the runtime's interface has no need of). */
  async #raw(method: string, path: string, body: unknown, contentType = 'application/json'): Promise<void> {
    const server = this.#o.config.getCurrentCluster()?.server ?? '';
    const options = (await this.#o.config.applyToFetchOptions({})) as {
      agent?: unknown;
      headers?: ConstructorParameters<typeof Headers>[0];
    };
    // client-node gives a Headers object (a spread of it is {}): its entries carry the token.
    const credentials = Object.fromEntries(new Headers(options.headers).entries());
    const url = new URL(server + path);
    const payload = JSON.stringify(body);
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    await new Promise<void>((resolve, reject) => {
      const req = send(
        url,
        {
          method,
          ...(options.agent ? { agent: options.agent as never } : {}),
          headers: {
            ...credentials,
            'content-type': contentType,
            'content-length': Buffer.byteLength(payload),
          },
        },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => {
            text += chunk.toString();
          });
          response.on('end', () =>
            (response.statusCode ?? 500) < 300
              ? resolve()
              : reject(new Error(`${method} ${path}: ${response.statusCode} ${text.slice(0, 300)}`)),
          );
        },
      );
      req.on('error', reject);
      req.end(payload);
    });
  }
}

function signalNumber(signal: NodeJS.Signals | null): number {
  if (signal === 'SIGKILL') return 9;
  if (signal === 'SIGTERM') return 15;
  if (signal === 'SIGINT') return 2;
  return 0;
}
