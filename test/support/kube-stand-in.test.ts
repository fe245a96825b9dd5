/**
 * The stand-in follows the API conventions the Kubernetes runtime relies on, seen through the runtime's own client
 * adapter (client-api.ts): resourceVersions, Status bodies, watch streams with resume and 410 Gone, graceful pod
 * deletion confirmed by the kubelet, eviction, pods/log.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type KubernetesApi, KubernetesApiError, type WatchEvent } from '../../src/runtime/kubernetes/api.js';
import { clientApi } from '../../src/runtime/kubernetes/client-api.js';
import type { Pod } from '../../src/runtime/kubernetes/objects.js';
import { KubeStandIn } from './kube-stand-in.js';
import { eventually } from './runtime-contract.js';

const NS = 'corral-workers';

function pod(name: string, labels: Record<string, string> = { app: 'a' }): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, labels },
    spec: { containers: [{ name: 'worker', image: 'x' }], terminationGracePeriodSeconds: 5 },
  };
}

let standIn: KubeStandIn;
let api: KubernetesApi;

beforeEach(async () => {
  standIn = new KubeStandIn({ historyLimit: 5 });
  await standIn.start();
  const config = new KubeConfig();
  config.loadFromString(standIn.kubeconfig());
  api = clientApi(config);
});

afterEach(async () => {
  await standIn.close();
});

async function failure(promise: Promise<unknown>): Promise<KubernetesApiError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(KubernetesApiError);
  return error as KubernetesApiError;
}

function watch(resourceVersion: string, labelSelector = 'app=a') {
  const events: WatchEvent[] = [];
  const ends: unknown[] = [];
  const controller = new AbortController();
  const opened = api.watchPods(
    NS,
    { labelSelector, resourceVersion, signal: controller.signal },
    (event) => events.push(event),
    (error) => ends.push(error ?? 'closed'),
  );
  return { events, ends, opened, stop: () => controller.abort() };
}

describe('the Kubernetes API stand-in', () => {
  it('gives every object and list a resourceVersion that grows with each write', async () => {
    const created = await api.createPod(NS, pod('p1'));
    const first = Number(created.metadata?.resourceVersion);
    expect(first).toBeGreaterThan(0);
    expect(created.metadata?.uid).toEqual(expect.any(String));
    await api.createPod(NS, pod('p2', { app: 'b' }));
    const list = await api.listPods(NS, 'app=a');
    expect(list.items.map((p) => p.metadata?.name)).toEqual(['p1']);
    expect(Number(list.resourceVersion)).toBeGreaterThan(first);
  });

  it('answers with Status bodies: 404 NotFound, 409 AlreadyExists', async () => {
    const missing = await failure(api.readPod(NS, 'nope'));
    expect(missing).toMatchObject({ status: 404, reason: 'NotFound' });
    expect(missing.message).toContain('pods "nope" not found');
    await api.createPod(NS, pod('p1'));
    expect(await failure(api.createPod(NS, pod('p1')))).toMatchObject({
      status: 409,
      reason: 'AlreadyExists',
    });
    expect(await failure(api.deletePod(NS, 'nope', 0))).toMatchObject({ status: 404 });
  });

  it('a watch from a version gets what followed it, in order, only for its selector', async () => {
    const { resourceVersion } = await api.listPods(NS, 'app=a');
    await api.createPod(NS, pod('p1'));
    await api.createPod(NS, pod('other', { app: 'b' }));
    const w = watch(resourceVersion);
    await w.opened;
    await api.deletePod(NS, 'p1', 0);
    await eventually(() =>
      expect(w.events.filter((e) => e.type !== 'BOOKMARK').map((e) => e.type)).toEqual(['ADDED', 'DELETED']),
    );
    w.stop();
  });

  it('a watch from a version older than its history gets ERROR with a 410 Status', async () => {
    const { resourceVersion } = await api.listPods(NS, '');
    for (let n = 0; n < 7; n += 1) await api.createPod(NS, pod(`p${n}`));
    const w = watch(resourceVersion);
    await w.opened;
    await eventually(() =>
      expect(w.events).toEqual([
        { type: 'ERROR', status: expect.objectContaining({ code: 410, reason: 'Expired' }) },
      ]),
    );
    w.stop();
  });

  it('deletes a pod on a node gracefully: terminating until the kubelet confirms with grace 0', async () => {
    await api.createPod(NS, pod('p1'));
    const response = await fetch(`${standIn.url}/api/v1/namespaces/${NS}/pods/p1/binding`, {
      method: 'POST',
      body: JSON.stringify({ target: { kind: 'Node', name: 'n1' } }),
    });
    expect(response.status).toBe(201);
    await api.deletePod(NS, 'p1', 5);
    const terminating = await api.readPod(NS, 'p1');
    expect(terminating.metadata?.deletionTimestamp).toBeDefined();
    expect(terminating.metadata?.deletionGracePeriodSeconds).toBe(5);
    await api.deletePod(NS, 'p1', 0);
    expect(await failure(api.readPod(NS, 'p1'))).toMatchObject({ status: 404 });
  });

  it("evicts a pod as the Eviction API does without a budget: DisruptionTarget, then a graceful delete (the pod's period or the Eviction's)", async () => {
    await api.createPod(NS, pod('p1'));
    await fetch(`${standIn.url}/api/v1/namespaces/${NS}/pods/p1/binding`, {
      method: 'POST',
      body: JSON.stringify({ target: { kind: 'Node', name: 'n1' } }),
    });
    const mismatched = await fetch(`${standIn.url}/api/v1/namespaces/${NS}/pods/p1/eviction`, {
      method: 'POST',
      body: JSON.stringify({ apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'p2' } }),
    });
    expect(mismatched.status).toBe(400);
    expect(await standIn.evictPod(NS, 'p1')).toBe(201);
    const evicted = await api.readPod(NS, 'p1');
    expect(evicted.metadata?.deletionGracePeriodSeconds).toBe(5);
    expect(evicted.status?.conditions).toContainEqual(
      expect.objectContaining({ type: 'DisruptionTarget', status: 'True', reason: 'EvictionByEvictionAPI' }),
    );
    await api.createPod(NS, pod('p2'));
    await fetch(`${standIn.url}/api/v1/namespaces/${NS}/pods/p2/binding`, {
      method: 'POST',
      body: JSON.stringify({ target: { kind: 'Node', name: 'n1' } }),
    });
    expect(await standIn.evictPod(NS, 'p2', 2)).toBe(201);
    expect((await api.readPod(NS, 'p2')).metadata?.deletionGracePeriodSeconds).toBe(2);
    expect(await standIn.evictPod(NS, 'gone')).toBe(404);
  });

  it('serves pods/log once the container started, following until it ends', async () => {
    await api.createPod(NS, pod('p1'));
    const early = await failure(api.podLog(NS, 'p1', { container: 'worker', follow: false }));
    expect(early.status).toBe(400);
    const patch = await fetch(`${standIn.url}/api/v1/namespaces/${NS}/pods/p1/status`, {
      method: 'PATCH',
      headers: { 'content-type': 'application/merge-patch+json' },
      body: JSON.stringify({
        status: {
          containerStatuses: [
            { name: 'worker', image: 'x', imageID: '', ready: true, restartCount: 0, state: { running: {} } },
          ],
        },
      }),
    });
    expect(patch.status).toBe(200);
    standIn.appendLog(NS, 'p1', 'one\ntwo\n');
    const stream = await api.podLog(NS, 'p1', { container: 'worker', follow: true });
    const chunks: string[] = [];
    const done = (async () => {
      for await (const chunk of stream) chunks.push(chunk.toString());
    })();
    await eventually(() => expect(chunks.join('')).toBe('one\ntwo\n'));
    standIn.appendLog(NS, 'p1', 'three\n');
    await eventually(() => expect(chunks.join('')).toBe('one\ntwo\nthree\n'));
    await api.deletePod(NS, 'p1', 0);
    await done;
  });
});
