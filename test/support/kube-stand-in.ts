/**
 * A small in-process stand-in of the Kubernetes API subset Corral's Kubernetes runtime uses, on a real HTTP server
 * (127.0.0.1, port 0): pods (create, get, list and watch by label selector, delete with a grace period, binding,
 * status patch, log, eviction), Secrets, PersistentVolumeClaims (read), nodes (list and watch; the test adds, changes
 * and removes them), metrics.k8s.io PodMetrics, and what `kubectl drain` asks (discovery, a node's get and cordon, a
 * node's pods across namespaces). It follows
 * the API's conventions: a resourceVersion on every object and list, watch event streams (ADDED, MODIFIED, DELETED,
 * BOOKMARK, and ERROR with a 410 Status once a version is too old), Status bodies with 404/409/410/422. The test
 * plays the kubelet (test-kubelet.ts). docs/kubernetes.md says what it does not model.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Node, PersistentVolumeClaim, PodMetrics } from '../../src/runtime/kubernetes/api.js';
import type { Pod, Secret } from '../../src/runtime/kubernetes/objects.js';

type Kind = 'pods' | 'secrets' | 'nodes';
type StoredObject = (Pod | Secret | Node) & { metadata: NonNullable<Pod['metadata']> & { name: string } };

/** The `kind` of a list and of a bookmark's object. */
const KIND_NAMES: Record<Kind, string> = { pods: 'Pod', secrets: 'Secret', nodes: 'Node' };

interface HistoryEvent {
  rv: number;
  kind: Kind;
  namespace: string;
  type: 'ADDED' | 'MODIFIED' | 'DELETED';
  object: StoredObject;
}

interface Watcher {
  kind: Kind;
  namespace: string;
  selector: Selector;
  response: ServerResponse;
}

interface LogState {
  lines: string[];
  followers: Set<ServerResponse>;
  ended: boolean;
}

type Requirement = { key: string; op: '=' | '!=' | 'exists' | '!exists'; value?: string };
type Selector = Requirement[];

class HttpFailure extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

function parseSelector(text: string | null): Selector {
  if (!text) return [];
  return text
    .split(',')
    .filter((part) => part.trim() !== '')
    .map((part): Requirement => {
      const p = part.trim();
      const ne = p.indexOf('!=');
      if (ne >= 0) return { key: p.slice(0, ne), op: '!=', value: p.slice(ne + 2) };
      const eq = p.indexOf('=');
      if (eq >= 0) return { key: p.slice(0, eq), op: '=', value: p.slice(eq).replace(/^==?/, '') };
      if (p.startsWith('!')) return { key: p.slice(1), op: '!exists' };
      return { key: p, op: 'exists' };
    });
}

function matches(selector: Selector, labels: Record<string, string> | undefined): boolean {
  return selector.every(({ key, op, value }) => {
    const actual = labels?.[key];
    if (op === 'exists') return actual !== undefined;
    if (op === '!exists') return actual === undefined;
    if (op === '=') return actual === value;
    return actual !== value;
  });
}

function clone<T>(value: T): T {
  return structuredClone(value);
}

/** RFC 7386 JSON merge patch: objects merge, null deletes, anything else (arrays included) replaces. */
function mergePatch(target: unknown, patch: unknown): unknown {
  if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return patch;
  const base: Record<string, unknown> =
    target !== null && typeof target === 'object' && !Array.isArray(target)
      ? { ...(target as Record<string, unknown>) }
      : {};
  for (const [key, value] of Object.entries(patch)) {
    if (value === null) delete base[key];
    else base[key] = mergePatch(base[key], value);
  }
  return base;
}

export interface StandInOptions {
  /** How many events the watch history keeps; a watch from an older version gets 410 Gone. Default 1000. */
  historyLimit?: number;
}

export class KubeStandIn {
  readonly #server: Server;
  readonly #objects = new Map<string, StoredObject>();
  readonly #history: HistoryEvent[] = [];
  readonly #historyLimit: number;
  readonly #watchers = new Set<Watcher>();
  readonly #listeners = new Set<
    (kind: Kind, type: HistoryEvent['type'], object: Pod | Secret | Node) => void
  >();
  readonly #logs = new Map<string, LogState>();
  readonly #metrics = new Map<string, PodMetrics>();
  readonly #claims = new Map<string, PersistentVolumeClaim>();
  #rv = 1;
  /** Events older than this were compacted away. */
  #oldest = 1;
  /** Requests served, by `METHOD kind[/subresource]` (a watch counts once, when it opens). */
  readonly requests = new Map<string, number>();
  #port = 0;
  #down = false;

  constructor(options: StandInOptions = {}) {
    this.#historyLimit = options.historyLimit ?? 1000;
    this.#server = createServer((request, response) => {
      this.#handle(request, response).catch((error: unknown) => {
        const failure =
          error instanceof HttpFailure ? error : new HttpFailure(500, 'InternalError', String(error));
        if (!response.headersSent) this.#status(response, failure.code, failure.reason, failure.message);
        else response.destroy();
      });
    });
  }

  async start(): Promise<void> {
    await new Promise<void>((resolve) => this.#server.listen(0, '127.0.0.1', resolve));
    this.#port = (this.#server.address() as AddressInfo).port;
  }

  get url(): string {
    return `http://127.0.0.1:${this.#port}`;
  }

  /** A kubeconfig (YAML is JSON's superset) naming this server, for KubeConfig.loadFromString. */
  kubeconfig(): string {
    return JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'stand-in', cluster: { server: this.url, 'insecure-skip-tls-verify': true } }],
      users: [{ name: 'stand-in', user: { token: 'stand-in' } }],
      contexts: [{ name: 'stand-in', context: { cluster: 'stand-in', user: 'stand-in' } }],
      'current-context': 'stand-in',
    });
  }

  async close(): Promise<void> {
    this.dropWatches();
    for (const log of this.#logs.values()) for (const follower of log.followers) follower.end();
    this.#server.closeAllConnections();
    await new Promise<void>((resolve) => this.#server.close(() => resolve()));
  }

  /** Total requests served since the last reset. */
  requestCount(): number {
    let total = 0;
    for (const n of this.requests.values()) total += n;
    return total;
  }

  resetRequests(): void {
    this.requests.clear();
  }

  /** Ends every open watch stream, as an API server does now and then (a watch resumes from its last version). */
  dropWatches(): void {
    for (const watcher of this.#watches()) watcher.response.end();
    this.#watchers.clear();
  }

  /** Forgets the event history: a watch from any version seen so far gets 410 Gone (etcd compaction). */
  compact(): void {
    this.#oldest = this.#rv + 1;
    this.#history.length = 0;
  }

  /** While down, every request is refused with a reset connection (an unreachable server). */
  setDown(down: boolean): void {
    this.#down = down;
    if (down) {
      this.dropWatches();
      this.#server.closeAllConnections();
    }
  }

  /** A node joins the cluster (nodes are cluster-scoped: no namespace); watchers of nodes hear ADDED. */
  addNode(node: Node): void {
    const object = clone(node) as StoredObject;
    const name = object.metadata?.name ?? '';
    object.metadata = {
      ...object.metadata,
      name,
      uid: randomUUID(),
      creationTimestamp: new Date().toISOString(),
    };
    this.#objects.set(this.#key('nodes', '', name), object);
    this.#emit('nodes', '', 'ADDED', object);
  }

  /** The node's labels, spec or status change (a JSON merge patch, as `kubectl label`/the kubelet would). */
  patchNode(name: string, patch: Partial<Node>): void {
    const key = this.#key('nodes', '', name);
    const object = this.#objects.get(key);
    if (!object) throw new Error(`no node ${name}`);
    const patched = mergePatch(object, patch) as StoredObject;
    this.#objects.set(key, patched);
    this.#emit('nodes', '', 'MODIFIED', patched);
  }

  /** The node leaves the cluster. */
  removeNode(name: string): void {
    const key = this.#key('nodes', '', name);
    const object = this.#objects.get(key);
    if (!object) return;
    this.#objects.delete(key);
    this.#emit('nodes', '', 'DELETED', object);
  }

  nodes(): Node[] {
    return this.#matching('nodes', '', []).map((n) => clone(n) as Node);
  }

  addClaim(namespace: string, name: string, phase = 'Bound'): void {
    this.#claims.set(`${namespace}/${name}`, { metadata: { name }, status: { phase } });
  }

  /** What the kubelet reports of a pod's usage (metrics.k8s.io). */
  setMetrics(namespace: string, name: string, metrics: PodMetrics | undefined): void {
    if (metrics) this.#metrics.set(`${namespace}/${name}`, metrics);
    else this.#metrics.delete(`${namespace}/${name}`);
  }

  /** The container wrote lines (the kubelet's log); followers get them at once. */
  appendLog(namespace: string, name: string, text: string): void {
    const log = this.#log(namespace, name);
    const lines = text.split('\n');
    if (lines.at(-1) === '') lines.pop();
    for (const line of lines) {
      log.lines.push(line);
      for (const follower of log.followers) follower.write(`${line}\n`);
    }
  }

  /** Evicts a pod as `kubectl drain` does (POST pods/{name}/eviction over HTTP: #evict); resolves to the status. */
  async evictPod(namespace: string, name: string, graceSeconds?: number): Promise<number> {
    const answer = await fetch(`${this.url}/api/v1/namespaces/${namespace}/pods/${name}/eviction`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({
        apiVersion: 'policy/v1',
        kind: 'Eviction',
        metadata: { name, namespace },
        ...(graceSeconds === undefined ? {} : { deleteOptions: { gracePeriodSeconds: graceSeconds } }),
      }),
    });
    await answer.arrayBuffer();
    return answer.status;
  }

  /** Deletes a pod at once, as if by someone else while the test's clients cannot reach the server. */
  deletePodNow(namespace: string, name: string): void {
    const key = this.#key('pods', namespace, name);
    const object = this.#objects.get(key);
    if (!object) return;
    this.#objects.delete(key);
    this.#emit('pods', namespace, 'DELETED', object);
    this.#endLog(namespace, name);
  }

  /**
   * Hears every change as it is made (in process, after the watchers got it): a kubelet played in the same process
   * (the controller benchmark's) reacts without requests of its own. Returns the unsubscribe function.
   */
  onChange(
    listener: (kind: Kind, type: HistoryEvent['type'], object: Pod | Secret | Node) => void,
  ): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /**
   * A pod made and running already (in process, no request), as one a previous Corral made would be found: stored as
   * the create would store it, then run by `runPod`.
   */
  seedPod(pod: Pod, node: string, ip: string): void {
    const object = clone(pod) as StoredObject;
    const namespace = object.metadata.namespace ?? '';
    object.metadata = {
      ...object.metadata,
      uid: randomUUID(),
      creationTimestamp: new Date().toISOString(),
    };
    (object as Pod).status = { phase: 'Pending', qosClass: 'Guaranteed' };
    this.#objects.set(this.#key('pods', namespace, object.metadata.name), object);
    this.#emit('pods', namespace, 'ADDED', object);
    this.runPod(namespace, object.metadata.name, node, ip);
  }

  /**
   * The kubelet runs a pod, in one change (in process, no request): bound to `node`, phase Running with `ip`, its
   * container running. False when there is no such pod, or it is being deleted.
   */
  runPod(namespace: string, name: string, node: string, ip: string): boolean {
    const pod = this.#objects.get(this.#key('pods', namespace, name)) as (Pod & StoredObject) | undefined;
    if (!pod || pod.metadata.deletionTimestamp !== undefined) return false;
    const now = new Date().toISOString();
    const container = pod.spec?.containers[0];
    pod.spec = { ...(pod.spec ?? { containers: [] }), nodeName: node };
    pod.status = {
      ...pod.status,
      phase: 'Running',
      podIP: ip,
      podIPs: [{ ip }],
      hostIP: '10.0.0.1',
      startTime: now,
      conditions: [{ type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now }],
      containerStatuses: [
        {
          name: container?.name ?? 'worker',
          image: container?.image ?? '',
          imageID: `${container?.image ?? ''}@sha256:0`,
          containerID: `bench://${name}`,
          ready: true,
          restartCount: 0,
          started: true,
          state: { running: { startedAt: now } },
        },
      ],
    };
    this.#emit('pods', namespace, 'MODIFIED', pod);
    return true;
  }

  /** A stored pod (for tests' assertions), or undefined. */
  pod(namespace: string, name: string): Pod | undefined {
    const found = this.#objects.get(this.#key('pods', namespace, name));
    return found ? (clone(found) as Pod) : undefined;
  }

  pods(namespace: string): Pod[] {
    return [...this.#objects.entries()]
      .filter(([key]) => key.startsWith(`pods/${namespace}/`))
      .map(([, object]) => clone(object) as Pod);
  }

  secrets(namespace: string): Secret[] {
    return [...this.#objects.entries()]
      .filter(([key]) => key.startsWith(`secrets/${namespace}/`))
      .map(([, object]) => clone(object) as Secret);
  }

  *#watches(): Iterable<Watcher> {
    yield* this.#watchers;
  }

  #key(kind: Kind, namespace: string, name: string): string {
    return `${kind}/${namespace}/${name}`;
  }

  #log(namespace: string, name: string): LogState {
    const key = `${namespace}/${name}`;
    let log = this.#logs.get(key);
    if (!log) {
      log = { lines: [], followers: new Set(), ended: false };
      this.#logs.set(key, log);
    }
    return log;
  }

  #endLog(namespace: string, name: string): void {
    const log = this.#logs.get(`${namespace}/${name}`);
    if (!log) return;
    log.ended = true;
    for (const follower of log.followers) follower.end();
    log.followers.clear();
  }

  #count(method: string, what: string): void {
    const key = `${method} ${what}`;
    this.requests.set(key, (this.requests.get(key) ?? 0) + 1);
  }

  #status(response: ServerResponse, code: number, reason: string, message: string): void {
    response.writeHead(code, { 'content-type': 'application/json' });
    response.end(
      JSON.stringify({
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        message,
        reason,
        code,
      }),
    );
  }

  #json(response: ServerResponse, code: number, body: unknown): void {
    response.writeHead(code, { 'content-type': 'application/json' });
    response.end(JSON.stringify(body));
  }

  /** Records a change: a new resourceVersion on the object, an event in the history, sent to matching watchers. */
  #emit(kind: Kind, namespace: string, type: HistoryEvent['type'], object: StoredObject): void {
    this.#rv += 1;
    object.metadata.resourceVersion = String(this.#rv);
    const event: HistoryEvent = { rv: this.#rv, kind, namespace, type, object: clone(object) };
    this.#history.push(event);
    if (this.#history.length > this.#historyLimit) {
      const dropped = this.#history.shift();
      if (dropped) this.#oldest = dropped.rv + 1;
    }
    for (const watcher of this.#watchers) this.#send(watcher, event);
    for (const listener of this.#listeners) listener(kind, type, event.object);
  }

  #send(watcher: Watcher, event: HistoryEvent): void {
    if (watcher.kind !== event.kind || watcher.namespace !== event.namespace) return;
    if (!matches(watcher.selector, event.object.metadata.labels)) return;
    watcher.response.write(`${JSON.stringify({ type: event.type, object: event.object })}\n`);
  }

  async #body(request: IncomingMessage): Promise<unknown> {
    const chunks: Buffer[] = [];
    for await (const chunk of request) chunks.push(chunk as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    if (text.trim() === '') return undefined;
    try {
      return JSON.parse(text);
    } catch {
      throw new HttpFailure(400, 'BadRequest', 'the request body is not JSON');
    }
  }

  async #handle(request: IncomingMessage, response: ServerResponse): Promise<void> {
    if (this.#down) {
      request.socket.destroy();
      return;
    }
    const url = new URL(request.url ?? '/', 'http://stand-in');
    const method = request.method ?? 'GET';
    const parts = url.pathname
      .split('/')
      .filter((p) => p !== '')
      .map(decodeURIComponent);
    // /api/v1/nodes (list and watch)
    if (parts.length === 3 && parts[0] === 'api' && parts[2] === 'nodes' && method === 'GET') {
      const watching = url.searchParams.get('watch') === 'true';
      this.#count(method, `nodes${watching ? '?watch' : ''}`);
      if (watching) return this.#watch('nodes', '', url, response);
      return this.#list('nodes', '', url, response);
    }
    if (await this.#kubectlDrain(parts, method, url, request, response)) return;
    // /apis/metrics.k8s.io/v1beta1/namespaces/{ns}/pods/{name}
    if (
      parts[0] === 'apis' &&
      parts[1] === 'metrics.k8s.io' &&
      parts[3] === 'namespaces' &&
      parts[5] === 'pods'
    ) {
      this.#count(method, 'pods.metrics');
      const namespace = parts[4] ?? '';
      const name = parts[6] ?? '';
      const metrics = this.#metrics.get(`${namespace}/${name}`);
      if (!metrics) throw new HttpFailure(404, 'NotFound', `podmetrics.metrics.k8s.io "${name}" not found`);
      this.#json(response, 200, {
        kind: 'PodMetrics',
        apiVersion: 'metrics.k8s.io/v1beta1',
        metadata: { name, namespace },
        ...metrics,
      });
      return;
    }
    if (parts[0] !== 'api' || parts[1] !== 'v1' || parts[2] !== 'namespaces' || parts.length < 5) {
      throw new HttpFailure(
        404,
        'NotFound',
        `the server could not find the requested resource ${url.pathname}`,
      );
    }
    const namespace = parts[3] ?? '';
    const resource = parts[4] ?? '';
    const name = parts[5];
    const sub = parts[6];
    if (resource === 'persistentvolumeclaims' && name !== undefined && method === 'GET') {
      this.#count(method, 'persistentvolumeclaims');
      const claim = this.#claims.get(`${namespace}/${name}`);
      if (!claim) throw new HttpFailure(404, 'NotFound', `persistentvolumeclaims "${name}" not found`);
      this.#json(response, 200, { kind: 'PersistentVolumeClaim', apiVersion: 'v1', ...claim });
      return;
    }
    if (resource !== 'pods' && resource !== 'secrets') {
      throw new HttpFailure(
        404,
        'NotFound',
        `the server could not find the requested resource ${url.pathname}`,
      );
    }
    const kind: Kind = resource;
    this.#count(
      method,
      `${kind}${sub ? `/${sub}` : ''}${url.searchParams.get('watch') === 'true' ? '?watch' : ''}`,
    );
    if (name === undefined) {
      if (method === 'GET' && url.searchParams.get('watch') === 'true')
        return this.#watch(kind, namespace, url, response);
      if (method === 'GET') return this.#list(kind, namespace, url, response);
      if (method === 'POST') return this.#create(kind, namespace, await this.#body(request), response);
      throw new HttpFailure(405, 'MethodNotAllowed', `${method} is not supported on ${kind}`);
    }
    if (sub === undefined) {
      if (method === 'GET') return this.#json(response, 200, this.#get(kind, namespace, name));
      if (method === 'DELETE')
        return this.#delete(kind, namespace, name, url, await this.#body(request), response);
      throw new HttpFailure(405, 'MethodNotAllowed', `${method} is not supported on ${kind}/${name}`);
    }
    if (kind === 'pods' && sub === 'binding' && method === 'POST') {
      return this.#bind(namespace, name, await this.#body(request), response);
    }
    if (kind === 'pods' && sub === 'eviction' && method === 'POST') {
      return this.#evict(namespace, name, await this.#body(request), response);
    }
    if (kind === 'pods' && sub === 'status' && method === 'PATCH') {
      return this.#patchStatus(namespace, name, await this.#body(request), response);
    }
    if (kind === 'pods' && sub === 'log' && method === 'GET')
      return this.#podLog(namespace, name, url, response);
    throw new HttpFailure(
      404,
      'NotFound',
      `the server could not find the requested resource ${url.pathname}`,
    );
  }

  /**
   * What `kubectl drain` needs beyond the pods' own routes (kubectl 1.32, read from its `-v=6` requests): discovery
   * (`/api`, `/apis`, `/api/v1`, `/apis/policy/v1`: the eviction subresource is found there), one node `GET` and
   * its cordon (`PATCH`, a strategic merge patch applied here as a JSON merge patch), and the pods of a node across
   * namespaces (`GET /api/v1/pods?fieldSelector=spec.nodeName=NAME`, the one field selector served). Handled: true.
   */
  async #kubectlDrain(
    parts: string[],
    method: string,
    url: URL,
    request: IncomingMessage,
    response: ServerResponse,
  ): Promise<boolean> {
    const path = parts.join('/');
    const resource = (name: string, kind: string, namespaced: boolean, verbs: string[], group?: string) => ({
      name,
      singularName: '',
      namespaced,
      kind,
      verbs,
      ...(group ? { group, version: 'v1' } : {}),
    });
    if (method === 'GET' && path === 'api') {
      this.#json(response, 200, { kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [] });
    } else if (method === 'GET' && path === 'apis') {
      const policy = { groupVersion: 'policy/v1', version: 'v1' };
      this.#json(response, 200, {
        kind: 'APIGroupList',
        apiVersion: 'v1',
        groups: [{ name: 'policy', versions: [policy], preferredVersion: policy }],
      });
    } else if (method === 'GET' && path === 'api/v1') {
      this.#json(response, 200, {
        kind: 'APIResourceList',
        groupVersion: 'v1',
        resources: [
          resource('nodes', 'Node', false, ['get', 'list', 'patch', 'watch']),
          resource('pods', 'Pod', true, ['create', 'delete', 'get', 'list', 'watch']),
          resource('pods/eviction', 'Eviction', true, ['create'], 'policy'),
          resource('secrets', 'Secret', true, ['create', 'delete', 'get', 'list']),
        ],
      });
    } else if (method === 'GET' && path === 'apis/policy/v1') {
      this.#json(response, 200, {
        kind: 'APIResourceList',
        groupVersion: 'policy/v1',
        resources: [resource('poddisruptionbudgets', 'PodDisruptionBudget', true, ['list'])],
      });
    } else if (
      parts.length === 4 &&
      path.startsWith('api/v1/nodes/') &&
      (method === 'GET' || method === 'PATCH')
    ) {
      const name = parts[3] ?? '';
      this.#count(method, 'nodes');
      if (method === 'PATCH') this.patchNode(name, (await this.#body(request)) as Partial<Node>);
      this.#json(response, 200, { kind: 'Node', apiVersion: 'v1', ...this.#get('nodes', '', name) });
    } else if (method === 'GET' && path === 'api/v1/pods') {
      this.#count(method, 'pods');
      const node = /^spec\.nodeName=(.*)$/.exec(url.searchParams.get('fieldSelector') ?? '')?.[1];
      const items = [...this.#objects.entries()]
        .filter(([key, object]) => key.startsWith('pods/') && (object as Pod).spec?.nodeName === node)
        .map(([, object]) => object);
      this.#json(response, 200, {
        kind: 'PodList',
        apiVersion: 'v1',
        metadata: { resourceVersion: String(this.#rv) },
        items,
      });
    } else {
      return false;
    }
    return true;
  }

  #get(kind: Kind, namespace: string, name: string): StoredObject {
    const object = this.#objects.get(this.#key(kind, namespace, name));
    if (!object) throw new HttpFailure(404, 'NotFound', `${kind} "${name}" not found`);
    return object;
  }

  #matching(kind: Kind, namespace: string, selector: Selector): StoredObject[] {
    const prefix = `${kind}/${namespace}/`;
    return [...this.#objects.entries()]
      .filter(([key, object]) => key.startsWith(prefix) && matches(selector, object.metadata.labels))
      .map(([, object]) => object);
  }

  #list(kind: Kind, namespace: string, url: URL, response: ServerResponse): void {
    const items = this.#matching(kind, namespace, parseSelector(url.searchParams.get('labelSelector')));
    this.#json(response, 200, {
      kind: `${KIND_NAMES[kind]}List`,
      apiVersion: 'v1',
      metadata: { resourceVersion: String(this.#rv) },
      items,
    });
  }

  #watch(kind: Kind, namespace: string, url: URL, response: ServerResponse): void {
    const selector = parseSelector(url.searchParams.get('labelSelector'));
    const from = url.searchParams.get('resourceVersion') ?? '';
    response.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked' });
    const watcher: Watcher = { kind, namespace, selector, response };
    if (from === '' || from === '0') {
      // No version: the current objects as ADDED, then what follows.
      for (const object of this.#matching(kind, namespace, selector)) {
        response.write(`${JSON.stringify({ type: 'ADDED', object })}\n`);
      }
    } else {
      const version = Number(from);
      if (!Number.isInteger(version) || version < this.#oldest - 1) {
        const message = `too old resource version: ${from} (${this.#oldest - 1})`;
        response.end(
          `${JSON.stringify({
            type: 'ERROR',
            object: {
              kind: 'Status',
              apiVersion: 'v1',
              metadata: {},
              status: 'Failure',
              message,
              reason: 'Expired',
              code: 410,
            },
          })}\n`,
        );
        return;
      }
      for (const event of this.#history) if (event.rv > version) this.#send(watcher, event);
      if (url.searchParams.get('allowWatchBookmarks') === 'true') {
        response.write(
          `${JSON.stringify({ type: 'BOOKMARK', object: { kind: KIND_NAMES[kind], apiVersion: 'v1', metadata: { resourceVersion: String(this.#rv) } } })}\n`,
        );
      }
    }
    this.#watchers.add(watcher);
    response.on('close', () => this.#watchers.delete(watcher));
  }

  #create(kind: Kind, namespace: string, body: unknown, response: ServerResponse): void {
    const object = clone(body) as StoredObject | undefined;
    const name = object?.metadata?.name;
    if (!object || typeof name !== 'string' || name === '') {
      throw new HttpFailure(422, 'Invalid', `${kind} is invalid: metadata.name: Required value`);
    }
    if (object.metadata.namespace !== undefined && object.metadata.namespace !== namespace) {
      throw new HttpFailure(
        400,
        'BadRequest',
        'the namespace of the object does not match the namespace on the request',
      );
    }
    const key = this.#key(kind, namespace, name);
    if (this.#objects.has(key))
      throw new HttpFailure(409, 'AlreadyExists', `${kind} "${name}" already exists`);
    object.metadata = {
      ...object.metadata,
      namespace,
      uid: randomUUID(),
      creationTimestamp: new Date().toISOString(),
    };
    if (kind === 'pods') {
      const pod = object as Pod;
      pod.spec = { ...pod.spec, containers: pod.spec?.containers ?? [] };
      pod.spec.terminationGracePeriodSeconds ??= 30;
      pod.status = { phase: 'Pending', qosClass: 'Guaranteed' };
    }
    this.#objects.set(key, object);
    this.#emit(kind, namespace, 'ADDED', object);
    this.#json(response, 201, object);
  }

  #delete(
    kind: Kind,
    namespace: string,
    name: string,
    url: URL,
    body: unknown,
    response: ServerResponse,
  ): void {
    const fromBody = (body as { gracePeriodSeconds?: number } | undefined)?.gracePeriodSeconds;
    const fromQuery = url.searchParams.get('gracePeriodSeconds');
    const object = this.#deleteObject(
      kind,
      namespace,
      name,
      fromQuery !== null ? Number(fromQuery) : fromBody,
    );
    if (kind === 'pods') this.#json(response, 200, object);
    else this.#json(response, 200, { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success' });
  }

  /** A delete with `grace` seconds (undefined: the pod's own period); a bound pod terminates until the kubelet confirms. */
  #deleteObject(kind: Kind, namespace: string, name: string, graceSeconds: number | undefined): StoredObject {
    const key = this.#key(kind, namespace, name);
    const object = this.#get(kind, namespace, name);
    const pod = kind === 'pods' ? (object as Pod) : undefined;
    const grace = graceSeconds ?? pod?.spec?.terminationGracePeriodSeconds ?? 0;
    // A pod on a node terminates gracefully: the kubelet stops it and confirms with a delete of grace 0.
    if (pod?.spec?.nodeName && grace > 0) {
      if (pod.metadata?.deletionTimestamp === undefined) {
        pod.metadata = {
          ...pod.metadata,
          deletionTimestamp: new Date(Date.now() + grace * 1000).toISOString(),
          deletionGracePeriodSeconds: grace,
        };
        this.#emit(kind, namespace, 'MODIFIED', object);
      }
      return object;
    }
    this.#objects.delete(key);
    this.#emit(kind, namespace, 'DELETED', object);
    if (kind === 'pods') {
      this.#endLog(namespace, name);
      this.#logs.delete(`${namespace}/${name}`);
      this.#metrics.delete(`${namespace}/${name}`);
    }
    return object;
  }

  /**
   * `POST pods/{name}/eviction`, as kube-apiserver's EvictionREST.Create (pkg/registry/core/pod/storage/eviction.go)
   * answers when no PodDisruptionBudget covers the pod (none is modelled): the Eviction's name must be the pod's
   * (400 otherwise); a pod that still runs gets the `DisruptionTarget` condition (reason `EvictionByEvictionAPI`,
   * written since 1.26 with PodDisruptionConditions), then is deleted with the Eviction's `deleteOptions` (its grace
   * period, else the pod's own); the answer is a `201` Status Success. What `kubectl drain` calls per pod.
   */
  #evict(namespace: string, name: string, body: unknown, response: ServerResponse): void {
    const eviction = body as
      | { metadata?: { name?: string }; deleteOptions?: { gracePeriodSeconds?: number } }
      | undefined;
    if (eviction?.metadata?.name !== name) {
      throw new HttpFailure(400, 'BadRequest', 'name in URL does not match name in Eviction object');
    }
    const pod = this.#get('pods', namespace, name) as Pod & StoredObject;
    const phase = pod.status?.phase;
    if (phase !== 'Succeeded' && phase !== 'Failed' && pod.metadata.deletionTimestamp === undefined) {
      const now = new Date().toISOString();
      pod.status = {
        ...pod.status,
        conditions: [
          ...(pod.status?.conditions ?? []).filter((c) => c.type !== 'DisruptionTarget'),
          {
            type: 'DisruptionTarget',
            status: 'True',
            reason: 'EvictionByEvictionAPI',
            message: 'Eviction API: evicting',
            lastProbeTime: null,
            lastTransitionTime: now,
          },
        ],
      };
      this.#emit('pods', namespace, 'MODIFIED', pod);
    }
    this.#deleteObject('pods', namespace, name, eviction.deleteOptions?.gracePeriodSeconds);
    this.#json(response, 201, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      code: 201,
    });
  }

  #bind(namespace: string, name: string, body: unknown, response: ServerResponse): void {
    const pod = this.#get('pods', namespace, name) as Pod;
    const node = (body as { target?: { name?: string } } | undefined)?.target?.name;
    if (!node) throw new HttpFailure(422, 'Invalid', 'Binding is invalid: target.name: Required value');
    if (pod.spec?.nodeName) {
      throw new HttpFailure(
        409,
        'Conflict',
        `pod ${name} is already assigned to node "${pod.spec.nodeName}"`,
      );
    }
    pod.spec = { ...(pod.spec ?? { containers: [] }), nodeName: node };
    const now = new Date().toISOString();
    pod.status = {
      ...pod.status,
      conditions: [
        ...(pod.status?.conditions ?? []).filter((c) => c.type !== 'PodScheduled'),
        { type: 'PodScheduled', status: 'True', lastProbeTime: null, lastTransitionTime: now },
      ],
    };
    this.#emit('pods', namespace, 'MODIFIED', pod as StoredObject);
    this.#json(response, 201, {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Success',
      code: 201,
    });
  }

  #patchStatus(namespace: string, name: string, body: unknown, response: ServerResponse): void {
    const pod = this.#get('pods', namespace, name) as Pod;
    const patch = (body as { status?: unknown } | undefined)?.status;
    if (patch === undefined) throw new HttpFailure(422, 'Invalid', 'the patch has no status');
    pod.status = mergePatch(pod.status, patch) as Pod['status'];
    const terminated = pod.status?.containerStatuses?.some((s) => s.state?.terminated !== undefined);
    if (terminated) this.#endLog(namespace, name);
    this.#emit('pods', namespace, 'MODIFIED', pod as StoredObject);
    this.#json(response, 200, pod);
  }

  #podLog(namespace: string, name: string, url: URL, response: ServerResponse): void {
    const pod = this.#get('pods', namespace, name) as Pod;
    // As a real API server: the log is the node's kubelet's, and a node it cannot find is a 404 naming the node.
    const node = pod.spec?.nodeName;
    if (node !== undefined && !this.#objects.has(this.#key('nodes', '', node))) {
      throw new HttpFailure(404, 'NotFound', `pods "${node}" not found`);
    }
    const container = url.searchParams.get('container') ?? pod.spec?.containers[0]?.name ?? '';
    const status = pod.status?.containerStatuses?.find((s) => s.name === container);
    if (!status || (status.state?.running === undefined && status.state?.terminated === undefined)) {
      const reason = status?.state?.waiting?.reason ?? 'ContainerCreating';
      throw new HttpFailure(
        400,
        'BadRequest',
        `container "${container}" in pod "${name}" is waiting to start: ${reason}`,
      );
    }
    const log = this.#log(namespace, name);
    const tail = url.searchParams.get('tailLines');
    const count = tail === null ? undefined : Math.max(0, Number(tail));
    const lines = count === undefined ? log.lines : count === 0 ? [] : log.lines.slice(-count);
    response.writeHead(200, { 'content-type': 'text/plain', 'transfer-encoding': 'chunked' });
    for (const line of lines) response.write(`${line}\n`);
    if (url.searchParams.get('follow') !== 'true' || log.ended) {
      response.end();
      return;
    }
    log.followers.add(response);
    response.on('close', () => log.followers.delete(response));
  }
}
