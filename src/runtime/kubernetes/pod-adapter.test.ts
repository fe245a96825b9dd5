/**
 * The pod adapter's own behaviour on the API stand-in, with the test as the kubelet: state from one watch (a steady
 * pass makes no API call; resume after a dropped stream; relist after 410 Gone; recovery after an outage), the
 * scheduler's words while a pod waits, pods deleted behind Corral's back, other installations' pods, pull Secrets,
 * claims of network volumes. The WorkerRuntime contract itself is kubernetes.contract.test.ts (on KubernetesRuntime,
 * the adapter with the node catalogue: kubernetes-adapter.test.ts).
 */
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import type { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  type StandInCluster,
  standInCluster,
  standInWorkerSpec,
} from '../../../test/support/kube-cluster.js';
import type { KubeStandIn } from '../../../test/support/kube-stand-in.js';
import { eventually } from '../../../test/support/runtime-contract.js';
import { LABELS, type PullProgress, RuntimeError, type RuntimeEvent } from '../types.js';
import { clientApi } from './client-api.js';
import { PodAdapter } from './pod-adapter.js';

const NS = 'corral-workers';
const FULL = '0/3 nodes are available: 3 Insufficient nvidia.com/gpu.';

let cluster: StandInCluster;
let standIn: KubeStandIn;
let config: KubeConfig;
let adapter: PodAdapter;
let logged: string[];
let installationId: string;

function newAdapter(id = installationId): PodAdapter {
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged.push(chunk.toString());
      done();
    },
  });
  return new PodAdapter({
    api: clientApi(config),
    namespace: NS,
    installationId: id,
    logger: pino({ level: 'debug' }, sink),
    pods: { terminationGraceSeconds: 2 },
    watchBackoff: { initialMs: 20, maxMs: 100 },
  });
}

beforeEach(async () => {
  logged = [];
  installationId = `kt-${randomUUID().slice(0, 8)}`;
  cluster = await standInCluster({ namespace: NS, unschedulable: new Map([['b200', FULL]]) });
  ({ standIn, config } = cluster);
  adapter = newAdapter();
});

afterEach(async () => {
  await adapter.close();
  await cluster.close();
});

describe('PodAdapter', () => {
  it('a steady pass (list and inspect of every worker) makes no API call', async () => {
    await Promise.all(['w1', 'w2', 'w3'].map((id) => adapter.create(standInWorkerSpec(id))));
    standIn.resetRequests();
    for (let pass = 0; pass < 5; pass += 1) {
      const workers = await adapter.list({ [LABELS.managed]: 'true' });
      expect(workers).toHaveLength(3);
      for (const worker of workers) expect(await adapter.inspect(worker.workerId)).toBeDefined();
    }
    expect(standIn.requestCount()).toBe(0);
    expect(adapter.watchStats.lists).toBe(1);
  });

  it("lists one endpoint's workers (the controller's reconcile of one endpoint), also after a pod is deleted", async () => {
    await adapter.create(standInWorkerSpec('a1', { endpointId: 'ep-a' }));
    await adapter.create(standInWorkerSpec('a2', { endpointId: 'ep-a' }));
    await adapter.create(standInWorkerSpec('b1', { endpointId: 'ep-b' }));
    const ids = async (selector: Record<string, string>) =>
      (await adapter.list(selector)).map((w) => w.workerId).sort();
    standIn.resetRequests();
    expect(await ids({ [LABELS.managed]: 'true', [LABELS.endpoint]: 'ep-a' })).toEqual(['a1', 'a2']);
    expect(await ids({ [LABELS.endpoint]: 'ep-b' })).toEqual(['b1']);
    expect(await ids({ [LABELS.endpoint]: 'ep-b', [LABELS.worker]: 'a1' })).toEqual([]);
    expect(await ids({ [LABELS.endpoint]: 'ep-none' })).toEqual([]);
    expect(standIn.requestCount()).toBe(0);
    await clientApi(config).deletePod(NS, adapter.pod('a1')?.metadata?.name ?? '', 1);
    await eventually(async () => expect(await ids({ [LABELS.endpoint]: 'ep-a' })).toEqual(['a2']));
  });

  it('resumes a dropped watch from its last version, without listing again', async () => {
    await adapter.create(standInWorkerSpec('w1'));
    standIn.dropWatches();
    await adapter.create(standInWorkerSpec('w2'));
    expect((await adapter.list({})).map((w) => w.workerId).sort()).toEqual(['w1', 'w2']);
    expect(adapter.watchStats.lists).toBe(1);
    expect(adapter.watchStats.watches).toBeGreaterThan(1);
  });

  it('relists when its version is too old (410 Gone) and sees what happened meanwhile', async () => {
    await adapter.create(standInWorkerSpec('w1'));
    const seen: RuntimeEvent[] = [];
    adapter.watch((event) => seen.push(event));
    // The pod is deleted while the API server cannot be reached and the history is compacted meanwhile: the watch
    // cannot resume from its version (410 Gone), only a fresh list can tell.
    standIn.setDown(true);
    await eventually(async () =>
      expect(await adapter.list({}).catch((e: unknown) => e)).toBeInstanceOf(RuntimeError),
    );
    const [pod] = standIn.pods(NS);
    standIn.deletePodNow(NS, pod?.metadata?.name ?? '');
    standIn.compact();
    standIn.setDown(false);
    await eventually(() => expect(adapter.watchStats.relistsOnGone).toBeGreaterThan(0));
    await eventually(async () => expect(await adapter.list({})).toEqual([]));
    expect(seen).toContainEqual({ type: 'removed', workerId: 'w1' });
  });

  it('an unreachable API server fails reads with UNAVAILABLE; it recovers by itself once back', async () => {
    await adapter.create(standInWorkerSpec('w1'));
    standIn.setDown(true);
    await eventually(async () => {
      const error = await adapter.list({}).then(
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
    await eventually(() => expect(adapter.watchStats.reconnects).toBeGreaterThan(0));
    await eventually(async () => expect((await adapter.list({})).map((w) => w.workerId)).toEqual(['w1']));
  });

  it("a pod waiting for the scheduler: pending, the scheduler's words its progress; removing it ends the create", async () => {
    const progress: PullProgress[] = [];
    const creating = adapter.create(
      standInWorkerSpec('w1', { placement: { product: 'b200', gpuNum: 1, authId: '' } }),
      (p) => progress.push(p),
    );
    await eventually(() => expect(progress).toContainEqual({ phase: 'pending', message: FULL }));
    const waiting = await adapter.inspect('w1');
    expect(waiting).toMatchObject({ phase: 'pending', message: FULL });
    const pod = adapter.pod('w1');
    expect(pod?.spec?.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'b200' });
    expect(pod?.spec?.containers[0]?.resources?.limits).toMatchObject({ 'nvidia.com/gpu': '1' });
    await adapter.remove('w1', { graceSeconds: 0 });
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
    await adapter.create(standInWorkerSpec('w1'));
    const error = await (async () => {
      for await (const _ of adapter.logs('w1', { follow: false })) break;
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
    await adapter.create(standInWorkerSpec('w1'));
    const seen: RuntimeEvent[] = [];
    adapter.watch((event) => seen.push(event));
    const name = adapter.pod('w1')?.metadata?.name ?? '';
    await clientApi(config).deletePod(NS, name, 1);
    await eventually(() => expect(seen).toContainEqual({ type: 'removed', workerId: 'w1' }));
    expect(await adapter.inspect('w1')).toBeUndefined();
  });

  it("keeps the worker's env values in a Secret named as its pod, none in the pod's spec, and deletes it with the pod", async () => {
    const token = 'job-token-s3cr3t';
    await adapter.create(
      standInWorkerSpec('w1', { env: { RUNPOD_AI_API_KEY: token, HF_TOKEN: 'hf-s3cr3t' } }),
    );
    const pod = adapter.pod('w1');
    const name = pod?.metadata?.name ?? '';
    expect(JSON.stringify(pod)).not.toContain(token);
    expect(JSON.stringify(pod)).not.toContain('hf-s3cr3t');
    expect(pod?.spec?.containers[0]?.env).toContainEqual({
      name: 'RUNPOD_AI_API_KEY',
      valueFrom: { secretKeyRef: { name, key: 'RUNPOD_AI_API_KEY' } },
    });
    const secret = standIn.secrets(NS).find((s) => s.metadata?.name === name);
    expect(secret?.metadata?.labels).toMatchObject({ [LABELS.managed]: 'true', [LABELS.worker]: 'w1' });
    // The Secret, as the API server made it (its uid), is the pod's controller: a drain evicts the pod.
    expect(pod?.metadata?.ownerReferences).toEqual([
      { apiVersion: 'v1', kind: 'Secret', name, uid: secret?.metadata?.uid, controller: true },
    ]);
    expect(Buffer.from(secret?.data?.RUNPOD_AI_API_KEY ?? '', 'base64').toString()).toBe(token);
    expect(logged.join('')).not.toContain(token);
    // Deleted behind Corral's back (kubectl, a drain's eviction): the Secret goes too.
    await clientApi(config).deletePod(NS, name, 1);
    await eventually(() => expect(standIn.secrets(NS).map((s) => s.metadata?.name)).not.toContain(name));
  });

  it('deletes, at its first listing, env Secrets whose pod went while it was not watching', async () => {
    await adapter.create(standInWorkerSpec('w1'));
    await adapter.create(standInWorkerSpec('w2'));
    await adapter.close();
    standIn.deletePodNow(NS, 'corral-w1');
    adapter = newAdapter();
    await adapter.ready();
    expect(standIn.secrets(NS).map((s) => s.metadata?.name)).toEqual(['corral-w2']);
  });

  it("never sees nor touches another installation's pods", async () => {
    const other = newAdapter('someone-else');
    try {
      await other.create(standInWorkerSpec('theirs'));
      await adapter.create(standInWorkerSpec('ours'));
      expect((await adapter.list({ [LABELS.managed]: 'true' })).map((w) => w.workerId)).toEqual(['ours']);
      await adapter.remove('theirs', { graceSeconds: 0 });
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
      standInWorkerSpec(id, { placement: { product: 'h100', gpuNum: 0, authId: 'cred1' }, registryAuth });
    await adapter.create(privateSpec('w1'));
    await adapter.create(privateSpec('w2'));
    const pullSecrets = () => standIn.secrets(NS).filter((s) => s.type === 'kubernetes.io/dockerconfigjson');
    const secrets = pullSecrets();
    expect(secrets.map((s) => s.metadata?.name)).toEqual(['corral-pull-cred1']);
    expect(secrets[0]?.type).toBe('kubernetes.io/dockerconfigjson');
    expect(adapter.pod('w1')?.spec?.imagePullSecrets).toEqual([{ name: 'corral-pull-cred1' }]);
    await adapter.remove('w1', { graceSeconds: 0 });
    expect(pullSecrets()).toHaveLength(1);
    await adapter.remove('w2', { graceSeconds: 0 });
    expect(pullSecrets()).toEqual([]);
    const log = logged.join('');
    expect(log).toContain('corral-pull-cred1');
    expect(log).not.toContain('hunter2-secret');
    expect(log).not.toContain(Buffer.from('bob:hunter2-secret').toString('base64'));
  });

  it('a network volume whose claim does not exist fails the create before any pod is made', async () => {
    const claimed = new PodAdapter({
      api: clientApi(config),
      namespace: NS,
      installationId,
      logger: pino({ level: 'silent' }),
      pods: { terminationGraceSeconds: 2, networkClaims: { '/mnt/models': 'models' } },
    });
    try {
      const volumes = [{ type: 'network' as const, hostPath: '/mnt/models', mountPath: '/models' }];
      const error = await claimed.create(standInWorkerSpec('w1', { volumes })).then(
        () => undefined,
        (e: unknown) => e,
      );
      expect((error as RuntimeError).code).toBe('RUNTIME_ERROR');
      expect((error as RuntimeError).message).toContain('PersistentVolumeClaim models');
      expect(standIn.pods(NS)).toEqual([]);
      standIn.addClaim(NS, 'models');
      const worker = await claimed.create(standInWorkerSpec('w2', { volumes }));
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
