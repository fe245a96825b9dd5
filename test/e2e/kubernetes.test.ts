/**
 * `corral serve --runtime kubernetes` as a process against the API stand-in, with the test as the kubelet: an
 * endpoint gets a pod with its GPU limit and node selector, serves through the gateway (the pod's loopback address
 * is real), scales to zero (its pod deleted), wakes, and a kill -9 of corral serve followed by a restart adopts the
 * running pod without a second one.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { labelSelector } from '../../src/runtime/kubernetes/api.js';
import { clientApi } from '../../src/runtime/kubernetes/client-api.js';
import type { Pod } from '../../src/runtime/kubernetes/objects.js';
import { LABELS } from '../../src/runtime/types.js';
import { KubeStandIn } from '../support/kube-stand-in.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { TestKubelet } from '../support/test-kubelet.js';

const KEY = 'e2e-kubernetes-operator-key-0123456';
const NS = 'corral-workers';

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
    const config = new KubeConfig();
    config.loadFromString(standIn.kubeconfig());
    kubelet = new TestKubelet({
      api: clientApi(config),
      config,
      namespace: NS,
      labelSelector: labelSelector({ [LABELS.managed]: 'true' }),
      missingImages: new Set(),
      standIn,
    });
    await kubelet.start();
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
        '--gpus',
        'h100-80g:2',
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
  }, 120_000);
});
