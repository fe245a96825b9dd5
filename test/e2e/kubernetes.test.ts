/**
 * `corral serve --runtime kubernetes` as a process against the API stand-in, with the test as the kubelet and the
 * scheduler (on two GPU nodes, no `--gpus`): an endpoint gets a pod with its GPU limit and node selector, serves
 * through the gateway (the pod's loopback address is real), scales to zero (its pod deleted), wakes, and a kill -9
 * of corral serve followed by a restart adopts the running pod without a second one. The endpoint's image is pulled
 * onto its product's node at the create by a pre-pull pod, deleted afterwards. GET products reports the
 * nodes' GPUs (a product configured by its node label, one found from the nodes' labels alone), the limits their
 * CUDA version, and a pod asking for more GPUs than the cluster has waits with the scheduler's message.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import type { Node } from '../../src/runtime/kubernetes/api.js';
import { labelSelector } from '../../src/runtime/kubernetes/api.js';
import { clientApi } from '../../src/runtime/kubernetes/client-api.js';
import type { Pod } from '../../src/runtime/kubernetes/objects.js';
import { PREPULL_LABEL } from '../../src/runtime/kubernetes/prepull-pods.js';
import { LABELS } from '../../src/runtime/types.js';
import { KubeStandIn } from '../support/kube-stand-in.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { TestKubelet } from '../support/test-kubelet.js';

const KEY = 'e2e-kubernetes-operator-key-0123456';
const NS = 'corral-workers';

/** A GPU node as GPU feature discovery and the device plugin leave it. */
function gpuNode(
  name: string,
  product: string,
  gpus: number,
  memoryMiB: number,
  cuda: [string, string],
): Node {
  return {
    metadata: {
      name,
      labels: {
        'kubernetes.io/hostname': name,
        'nvidia.com/gpu.present': 'true',
        'nvidia.com/gpu.product': product,
        'nvidia.com/gpu.memory': String(memoryMiB),
        'nvidia.com/gpu.count': String(gpus),
        'nvidia.com/cuda.driver.major': '550',
        'nvidia.com/cuda.runtime.major': cuda[0],
        'nvidia.com/cuda.runtime.minor': cuda[1],
      },
    },
    spec: {},
    status: {
      capacity: { cpu: '64', memory: '528012136Ki', 'nvidia.com/gpu': String(gpus), pods: '110' },
      allocatable: { cpu: '63500m', memory: '527909736Ki', 'nvidia.com/gpu': String(gpus), pods: '110' },
    },
  };
}

function until<T>(check: () => T | Promise<T>, timeoutMs: number): Promise<T> {
  return vi.waitFor(check, { timeout: timeoutMs, interval: 100 });
}

function viaGateway(server: ServeProcess, appName: string, path: string) {
  const url = new URL(server.gatewayUrl);
  return new Promise<{ status: number; headers: Record<string, unknown>; body: string }>((resolve) => {
    const req = request(
      {
        host: url.hostname,
        port: url.port,
        path,
        headers: { host: `${appName}.localhost:${url.port}`, authorization: `Bearer ${KEY}` },
      },
      (res) => {
        let body = '';
        res.on('data', (chunk: Buffer) => {
          body += chunk.toString();
        });
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
      },
    );
    req.on('error', (error) => resolve({ status: 0, headers: {}, body: error.message }));
    req.end();
  });
}

describe('the kubernetes runtime under corral serve, on the API stand-in', () => {
  let dataDir: string;
  let standIn: KubeStandIn;
  let kubelet: TestKubelet;
  let server: ServeProcess | undefined;
  const podsOf = (endpointId: string): Pod[] =>
    standIn.pods(NS).filter((p) => p.metadata?.labels?.[LABELS.endpoint] === endpointId);
  /** Image pre-pull pods as they are now, and every one ever made (node, image). */
  const prepullPods = (): Pod[] =>
    standIn.pods(NS).filter((p) => p.metadata?.labels?.[PREPULL_LABEL] !== undefined);
  const prepulled: [string, string][] = [];
  const podsOfWorkers = (): Pod[] =>
    standIn.pods(NS).filter((p) => p.metadata?.labels?.[LABELS.worker] !== undefined);

  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-k8s-'));
    standIn = new KubeStandIn();
    await standIn.start();
    writeFileSync(join(dataDir, 'kubeconfig'), standIn.kubeconfig());
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      'controller: { reconcileIntervalMs: 200 }\nquotas: { minGpus: unlimited, maxGpus: unlimited }\n' +
        'products: [{ id: h100-80g, nodeLabel: "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" }]\n',
    );
    standIn.addNode(gpuNode('gpu-h100-1', 'NVIDIA-H100-80GB-HBM3', 2, 81559, ['12', '4']));
    standIn.addNode(gpuNode('gpu-l4-1', 'NVIDIA-L4', 1, 23034, ['12', '2']));
    const config = new KubeConfig();
    config.loadFromString(standIn.kubeconfig());
    kubelet = new TestKubelet({
      api: clientApi(config),
      config,
      namespace: NS,
      labelSelector: labelSelector({ [LABELS.managed]: 'true' }),
      missingImages: new Set(),
      standIn,
      scheduleOnNodes: { gpuResource: 'nvidia.com/gpu' },
    });
    await kubelet.start();
    standIn.onChange((kind, type, object) => {
      const pod = object as Pod;
      if (kind === 'pods' && type === 'ADDED' && pod.metadata?.labels?.[PREPULL_LABEL] !== undefined)
        prepulled.push([pod.spec?.nodeName ?? '', pod.spec?.containers[0]?.image ?? '']);
    });
  });

  afterAll(async () => {
    await server?.stop();
    await kubelet?.stop();
    await standIn?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  const serve = () =>
    startServe(
      [
        '--runtime',
        'kubernetes',
        '--kubeconfig',
        join(dataDir, 'kubeconfig'),
        '--config',
        join(dataDir, 'corral.yaml'),
      ],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );

  it('serves an endpoint from its pod, scales to zero, wakes, and adopts its pod after a kill -9', async () => {
    server = await serve();
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        appName: 'kube',
        image: { image: 'corral-test-worker:latest' },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 2, gpuNum: 1 },
        healthy: { path: '/health' },
        products: [{ id: 'h100-80g' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    // Its image pulled onto its product's node at the create, before any request; the pre-pull pod deleted.
    await until(() => {
      expect(prepulled).toEqual([['gpu-h100-1', 'corral-test-worker:latest']]);
      expect(prepullPods()).toEqual([]);
    }, 30_000);

    // A request at zero wakes it: one pod, with the GPU limit and the product's node selector.
    const first = await viaGateway(server, 'kube', '/work?ms=1');
    expect(first.status, first.body).toBe(200);
    expect(Number(first.headers['x-corral-cold-start-ms'])).toBeGreaterThan(0);
    const [pod] = podsOf(id);
    expect(podsOf(id)).toHaveLength(1);
    expect(pod?.spec?.containers[0]?.resources?.limits).toMatchObject({ 'nvidia.com/gpu': '1' });
    expect(pod?.spec?.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' });
    expect(pod?.metadata?.labels?.[LABELS.installation]).toBe(server.installationId);
    expect(first.headers['x-corral-worker']).toBe(pod?.metadata?.labels?.[LABELS.worker]);

    // Idle past freeTimeout: scaled to zero, the pod deleted.
    await until(() => expect(podsOf(id)).toEqual([]), 30_000);

    // Wakes again.
    const again = await viaGateway(server, 'kube', '/work?ms=1');
    expect(again.status, again.body).toBe(200);
    const [woken] = podsOf(id);
    expect(woken).toBeDefined();

    // kill -9 while the pod runs; a restarted corral serve adopts it: the same pod serves, no second one appears.
    const updated = await callApi(server, KEY, 'endpoint/update', {
      id,
      endpoint: { workerConfig: { minNum: 1 } },
    });
    expect(updated.status, updated.text).toBe(200);
    server.child.kill('SIGKILL');
    await new Promise((resolve) => server?.child.once('exit', resolve));
    server = await serve();
    const afterRestart = await until(async () => {
      const answer = await viaGateway(server as ServeProcess, 'kube', '/work?ms=1');
      expect(answer.status, answer.body).toBe(200);
      return answer;
    }, 30_000);
    expect(afterRestart.headers['x-corral-worker']).toBe(woken?.metadata?.labels?.[LABELS.worker]);
    expect(podsOf(id).map((p) => p.metadata?.uid)).toEqual([woken?.metadata?.uid]);
    expect(podsOf(id)[0]?.spec?.nodeName).toBe('gpu-h100-1');
    // The restarted corral made the image present again; no pre-pull pod is left.
    await until(() => expect(prepullPods()).toEqual([]), 30_000);
  }, 120_000);

  it("reports the cluster's products and CUDA versions, and a pod too big for the cluster waits with the scheduler's words", async () => {
    server ??= await serve();
    // The first test's worker (1 GPU) may still run on the H100 node: what is free follows it.
    const held = podsOfWorkers().filter(
      (p) => p.spec?.nodeName === 'gpu-h100-1' && !p.metadata?.deletionTimestamp,
    ).length;
    const products = await callApi(server, KEY, 'products');
    expect(products.status, products.text).toBe(200);
    expect(products.body.products).toEqual([
      {
        id: 'h100-80g',
        name: 'NVIDIA-H100-80GB-HBM3',
        gpuModel: 'NVIDIA-H100-80GB-HBM3',
        gpuMemoryGB: 80,
        gpusTotal: 2,
        gpusFree: 2 - held,
      },
      // Not configured: found from GPU feature discovery's labels, named as Corral names a local GPU.
      { id: 'l4-24g', name: 'NVIDIA-L4', gpuModel: 'NVIDIA-L4', gpuMemoryGB: 24, gpusTotal: 1, gpusFree: 1 },
    ]);
    const limits = await callApi(server, KEY, 'endpoint/limit');
    expect(limits.body.cudaVersionList.at(-1)).toBe('12.2');
    // A worker is one pod on one node: the largest node (the H100 one, 2 GPUs) bounds it, not the configured 8.
    expect(limits.body.maxGPUNum).toBe(2);

    // Two GPUs of l4-24g, whose one node has one: the pod is made at once and the scheduler says why it waits.
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        appName: 'too-big',
        image: { image: 'corral-test-worker:latest' },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 1, maxNum: 1, gpuNum: 2 },
        healthy: { path: '/health' },
        products: [{ id: 'l4-24g' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    // Its image pulled onto its own product's node (not the H100 one again), its pre-pull pod deleted.
    await until(() => {
      expect(prepulled.filter(([node]) => node === 'gpu-l4-1')).toEqual([
        ['gpu-l4-1', 'corral-test-worker:latest'],
      ]);
      expect(prepullPods()).toEqual([]);
    }, 30_000);
    const why =
      "0/2 nodes are available: 1 Insufficient nvidia.com/gpu, 1 node(s) didn't match Pod's node affinity/selector.";
    await until(async () => {
      const [pod] = podsOf(id);
      expect(pod?.spec?.nodeSelector).toEqual({ 'nvidia.com/gpu.product': 'NVIDIA-L4' });
      expect(pod?.spec?.nodeName).toBeUndefined();
      const endpoint = (await callApi(server as ServeProcess, KEY, `endpoint?id=${id}`)).body.endpoint;
      // The scheduler has no room: pending (waiting for GPUs), not pulling.
      expect(
        endpoint.workers.map((w: { state: { state: string; message: string } }) => w.state),
      ).toMatchObject([{ state: 'pending', message: why }]);
    }, 30_000);
    const after = await callApi(server, KEY, 'products');
    expect(after.body.products[1]).toMatchObject({ id: 'l4-24g', gpusTotal: 1, gpusFree: 1 });
  }, 60_000);
});
