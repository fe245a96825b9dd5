/**
 * The Kubernetes runtime's own behaviour on the API stand-in, with the test as the kubelet: state from one watch (a
 * steady pass makes no API call; resume after a dropped stream; relist after 410 Gone; recovery after an outage),
 * the scheduler's words while a pod waits, pods deleted behind Corral's back, other installations' pods, pull
 * Secrets. The WorkerRuntime contract itself is kubernetes.contract.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type StandInCluster, standInCluster } from '../../../test/support/kube-cluster.js';
import type { KubeStandIn } from '../../../test/support/kube-stand-in.js';
import { eventually, testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { LABELS, type PullProgress, RuntimeError, type RuntimeEvent, type WorkerSpec } from '../types.js';
import { clientApi } from './client-api.js';
import { KubernetesRuntime } from './kubernetes-runtime.js';

const NS = 'corral-workers';
const FULL = '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.';

let cluster: StandInCluster;
let standIn: KubeStandIn;
let config: KubeConfig;
let runtime: KubernetesRuntime;
let logged: string[];
let installationId: string;

function spec(workerId: string, overrides: Partial<WorkerSpec> = {}): WorkerSpec {
  return testWorkerSpec({
    image: 'corral-test-worker:latest',
    workerId,
    endpointId: 'ep1',
    placement: { product: 'h100', gpuNum: 0, authId: '' },
    ...overrides,
  });
}

function newRuntime(id = installationId): KubernetesRuntime {
  // Products configured by id only: their nodes carry nvidia.com/gpu.product={id}.
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged.push(chunk.toString());
      done();
    },
  });
  return new KubernetesRuntime({
    api: clientApi(config),
    namespace: NS,
    installationId: id,
    logger: pino({ level: 'debug' }, sink),
    products: ['h100', 'b200'],
    pods: { terminationGraceSeconds: 2 },
    watchBackoff: { initialMs: 20, maxMs: 100 },
  });
}

beforeEach(async () => {
  logged = [];
  installationId = `kt-${randomUUID().slice(0, 8)}`;
  cluster = await standInCluster({ namespace: NS, unschedulable: new Map([['b200', FULL]]) });
  ({ standIn, config } = cluster);
  runtime = newRuntime();
});

afterEach(async () => {
  await runtime.close();
  await cluster.close();
});

describe('KubernetesRuntime', () => {
  it('a steady pass (list and inspect of every worker) makes no API call', async () => {
    await Promise.all(['w1', 'w2', 'w3'].map((id) => runtime.create(spec(id))));
    standIn.resetRequests();
    for (let pass = 0; pass < 5; pass += 1) {
      const workers = await runtime.list({ [LABELS.managed]: 'true' });
      expect(workers).toHaveLength(3);
      for (const worker of workers) expect(await runtime.inspect(worker.workerId)).toBeDefined();
    }
    expect(standIn.requestCount()).toBe(0);
    expect(runtime.watchStats.lists).toBe(1);
  });

  it('resumes a dropped watch from its last version, without listing again', async () => {
    await runtime.create(spec('w1'));
    standIn.dropWatches();
    await runtime.create(spec('w2'));
    expect((await runtime.list({})).map((w) => w.workerId).sort()).toEqual(['w1', 'w2']);
    expect(runtime.watchStats.lists).toBe(1);
    expect(runtime.watchStats.watches).toBeGreaterThan(1);
  });

  it('relists when its version is too old (410 Gone) and sees what happened meanwhile', async () => {
    await runtime.create(spec('w1'));
    const seen: RuntimeEvent[] = [];
    runtime.watch((event) => seen.push(event));
    // The pod is deleted while the API server cannot be reached and the history is compacted meanwhile: the watch
    // cannot resume from its version (410 Gone), only a fresh list can tell.
    standIn.setDown(true);
    await eventually(async () =>
      expect(await runtime.list({}).catch((e: unknown) => e)).toBeInstanceOf(RuntimeError),
    );
    const [pod] = standIn.pods(NS);
    standIn.deletePodNow(NS, pod?.metadata?.name ?? '');
    standIn.compact();
    standIn.setDown(false);
    await eventually(() => expect(runtime.watchStats.relistsOnGone).toBeGreaterThan(0));
    await eventually(async () => expect(await runtime.list({})).toEqual([]));
    expect(seen).toContainEqual({ type: 'removed', workerId: 'w1' });
  });

  it('an unreachable API server fails reads with UNAVAILABLE; it recovers by itself once back', async () => {
    await runtime.create(spec('w1'));
    standIn.setDown(true);
    await eventually(async () => {
      const error = await runtime.list({}).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(RuntimeError);
      expect((error as RuntimeError).code).toBe('UNAVAILABLE');
      expect((error as RuntimeError).message).toContain(
        `cannot reach the Kubernetes API server at ${standIn.url}`,
      );
    });
    standIn.setDown(false);
    await eventually(() => expect(runtime.watchStats.reconnects).toBeGreaterThan(0));
    await eventually(async () => expect((await runtime.list({})).map((w) => w.workerId)).toEqual(['w1']));
  });

  it("a pod waiting for the scheduler: pending, the scheduler's words its progress; removing it ends the create", async () => {
    const progress: PullProgress[] = [];
    const creating = runtime.create(
      spec('w1', { placement: { product: 'b200', gpuNum: 1, authId: '' } }),
      (p) => progress.push(p),
    );
    await eventually(() => expect(progress).toContainEqual({ phase: 'pending', message: FULL }));
    const waiting = await runtime.inspect('w1');
    expect(waiting).toMatchObject({ phase: 'pending', message: FULL });
    const pod = runtime.pod('w1');
    expect(pod?.spec?.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'b200' });
    expect(pod?.spec?.containers[0]?.resources?.limits).toMatchObject({ 'nvidia.com/gpu': '1' });
    await runtime.remove('w1', { graceSeconds: 0 });
    // Not a failure of the endpoint's: the worker comes back exited, without an address.
    const ended = await creating;
    expect(ended).toMatchObject({
      workerId: 'w1',
      phase: 'exited',
      message: 'the pod was deleted while starting',
    });
    expect(ended.address).toBeUndefined();
    expect(standIn.pods(NS)).toEqual([]);
  });

  it('a log its node cannot serve (the API server answers 404 for the node) is no missing worker', async () => {
    // The test kubelet binds pods to test-node-1, which is no Node here: the API server finds no kubelet to ask.
    await runtime.create(spec('w1'));
    const error = await (async () => {
      for await (const _ of runtime.logs('w1', { follow: false })) break;
    })().then(
      () => undefined,
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(RuntimeError);
    expect(error).toMatchObject({ code: 'RUNTIME_ERROR' });
    expect((error as Error).message).toContain('node test-node-1');
    expect((error as Error).message).not.toContain('does not exist');
  });

  it('a pod deleted behind its back is a removed worker', async () => {
    await runtime.create(spec('w1'));
    const seen: RuntimeEvent[] = [];
    runtime.watch((event) => seen.push(event));
    const name = runtime.pod('w1')?.metadata?.name ?? '';
    await clientApi(config).deletePod(NS, name, 1);
    await eventually(() => expect(seen).toContainEqual({ type: 'removed', workerId: 'w1' }));
    expect(await runtime.inspect('w1')).toBeUndefined();
  });

  it("never sees nor touches another installation's pods", async () => {
    const other = newRuntime('someone-else');
    try {
      await other.create(spec('theirs'));
      await runtime.create(spec('ours'));
      expect((await runtime.list({ [LABELS.managed]: 'true' })).map((w) => w.workerId)).toEqual(['ours']);
      await runtime.remove('theirs', { graceSeconds: 0 });
      expect(await other.inspect('theirs')).toMatchObject({ phase: 'running' });
      expect(standIn.pods(NS)).toHaveLength(2);
    } finally {
      await other.remove('theirs', { graceSeconds: 0 });
      await other.close();
    }
  });

  it('keeps one pull Secret per credential while a worker uses it, and never logs the password', async () => {
    const registryAuth = async () => ({
      username: 'bob',
      password: 'hunter2-secret',
      server: 'registry.example.com',
    });
    const privateSpec = (id: string) =>
      spec(id, { placement: { product: 'h100', gpuNum: 0, authId: 'cred1' }, registryAuth });
    await runtime.create(privateSpec('w1'));
    await runtime.create(privateSpec('w2'));
    const secrets = standIn.secrets(NS);
    expect(secrets.map((s) => s.metadata?.name)).toEqual(['corral-pull-cred1']);
    expect(secrets[0]?.type).toBe('kubernetes.io/dockerconfigjson');
    expect(runtime.pod('w1')?.spec?.imagePullSecrets).toEqual([{ name: 'corral-pull-cred1' }]);
    await runtime.remove('w1', { graceSeconds: 0 });
    expect(standIn.secrets(NS)).toHaveLength(1);
    await runtime.remove('w2', { graceSeconds: 0 });
    expect(standIn.secrets(NS)).toEqual([]);
    const log = logged.join('');
    expect(log).toContain('corral-pull-cred1');
    expect(log).not.toContain('hunter2-secret');
    expect(log).not.toContain(Buffer.from('bob:hunter2-secret').toString('base64'));
  });

  it("reports each product's nodes' allocatable GPUs and what its pods request, following the nodes' watch", async () => {
    await runtime.start();
    standIn.addNode({
      // The node the test kubelet binds every pod to.
      metadata: { name: 'test-node-1', labels: { 'nvidia.com/gpu.product': 'h100' } },
      status: { allocatable: { 'nvidia.com/gpu': '8' } },
    });
    await runtime.create(spec('w1', { placement: { product: 'h100', gpuNum: 2, authId: '' } }));
    void runtime
      .create(spec('w2', { placement: { product: 'b200', gpuNum: 1, authId: '' } }))
      .catch(() => undefined);
    await eventually(() => expect(runtime.pod('w2')).toBeDefined());
    const nodeCalls = () => [standIn.requests.get('GET nodes'), standIn.requests.get('GET nodes?watch')];
    expect(nodeCalls()).toEqual([1, 1]);
    await eventually(() =>
      expect(runtime.gpuScheduler.products()).toEqual([
        { id: 'h100', nodes: 1, gpusTotal: 8, gpusRequested: 2, gpusFree: 6, gpusWaiting: 0 },
        { id: 'b200', nodes: 0, gpusTotal: 0, gpusRequested: 0, gpusFree: 0, gpusWaiting: 1 },
      ]),
    );
    // A node that joins, one relabelled, one that leaves: the watch says so, with no call of the runtime's.
    standIn.addNode({
      metadata: {
        name: 'gpu-2',
        labels: { 'nvidia.com/gpu.product': 'NVIDIA-B200', 'nvidia.com/gpu.memory': '183359' },
      },
      status: { allocatable: { 'nvidia.com/gpu': '8' } },
    });
    await eventually(() =>
      expect(runtime.gpuScheduler.products().map((p) => [p.id, p.gpusTotal, p.gpusFree])).toEqual([
        ['h100', 8, 6],
        ['b200', 0, 0],
        ['b200-180g', 8, 8],
      ]),
    );
    standIn.patchNode('test-node-1', { spec: { unschedulable: true } });
    standIn.removeNode('gpu-2');
    await eventually(() =>
      expect(runtime.gpuScheduler.products().map((p) => [p.id, p.nodes, p.gpusTotal])).toEqual([
        ['h100', 0, 0],
        ['b200', 0, 0],
      ]),
    );
    // One list and one watch at the start, nothing since.
    expect(nodeCalls()).toEqual([1, 1]);
  });

  it('a network volume whose claim does not exist fails the create before any pod is made', async () => {
    const claimed = new KubernetesRuntime({
      api: clientApi(config),
      namespace: NS,
      installationId,
      logger: pino({ level: 'silent' }),
      pods: { terminationGraceSeconds: 2, networkClaims: { '/mnt/models': 'models' } },
    });
    try {
      const volumes = [{ type: 'network' as const, hostPath: '/mnt/models', mountPath: '/models' }];
      const error = await claimed.create(spec('w1', { volumes })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as RuntimeError).code).toBe('RUNTIME_ERROR');
      expect((error as RuntimeError).message).toContain('PersistentVolumeClaim models');
      expect(standIn.pods(NS)).toEqual([]);
      standIn.addClaim(NS, 'models');
      const worker = await claimed.create(spec('w2', { volumes }));
      expect(worker.phase).toBe('running');
      expect(claimed.pod('w2')?.spec?.volumes).toEqual([
        { name: 'volume-0', persistentVolumeClaim: { claimName: 'models' } },
      ]);
      await claimed.remove('w2', { graceSeconds: 0 });
    } finally {
      await claimed.close();
    }
  });
});
