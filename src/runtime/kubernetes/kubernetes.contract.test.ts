/**
 * The runtime contract suite against the Kubernetes runtime: always on the in-process stand-in of the API, and on a
 * real API server when CORRAL_TEST_KUBECONFIG names one (the test plays the kubelet on both).
 */
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:net';
import { KubeConfig } from '@kubernetes/client-node';
import pino from 'pino';
import { describe, it } from 'vitest';
import { KubeStandIn } from '../../../test/support/kube-stand-in.js';
import { crashTestWorker, runtimeContract, testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { TestKubelet } from '../../../test/support/test-kubelet.js';
import { LABELS, type WorkerSpec } from '../types.js';
import { labelSelector } from './api.js';
import { clientApi } from './client-api.js';
import { KubernetesRuntime } from './kubernetes-runtime.js';

const MISSING_IMAGE = 'corral-does-not-exist:nope';

async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return typeof address === 'object' && address ? address.port : 1;
}

function contract(
  name: string,
  connect: () => Promise<{
    config: KubeConfig;
    namespace: string;
    standIn?: KubeStandIn;
    /** Why logs and stats cannot be read there (no kubelet, no metrics server). */
    noLogsOrStats?: string;
  }>,
) {
  runtimeContract(name, async () => {
    const run = randomUUID().slice(0, 8);
    const { config, namespace, standIn, noLogsOrStats } = await connect();
    const api = clientApi(config);
    const installationId = `ct-${run}`;
    const runtime = new KubernetesRuntime({
      api,
      namespace,
      installationId,
      namePrefix: `corral-ct-${run}-`,
      logger: pino({ level: 'silent' }),
      pods: { terminationGraceSeconds: 2 },
    });
    const kubelet = new TestKubelet({
      api,
      config,
      namespace,
      labelSelector: labelSelector({ [LABELS.managed]: 'true', [LABELS.installation]: installationId }),
      missingImages: new Set([MISSING_IMAGE]),
      ...(standIn ? { standIn } : {}),
    });
    await kubelet.start();
    const spec = (overrides: Partial<WorkerSpec> = {}): WorkerSpec =>
      testWorkerSpec({ image: 'corral-test-worker:latest', ...overrides });
    return {
      runtime,
      workerSpec: spec,
      unavailableSpec: (overrides) => spec({ ...overrides, image: MISSING_IMAGE }),
      // Running means the process started, as with a real kubelet: it may not listen yet.
      kill: crashTestWorker,
      logLine: async (worker) => `worker ${worker.workerId} listening`,
      capabilities: {
        imagePull: true,
        realProcess: true,
        // Pulled onto the GPU nodes by pre-pull pods: the stand-in's node has GPUs; a real cluster's may not.
        prepareImage: standIn !== undefined,
        ...(noLogsOrStats ? { noLogsOrStats } : {}),
      },
      unreachable: async () => {
        const offline = new KubeConfig();
        offline.loadFromString(
          JSON.stringify({
            clusters: [
              {
                name: 'c',
                cluster: {
                  server: `http://127.0.0.1:${await closedPort()}`,
                  'insecure-skip-tls-verify': true,
                },
              },
            ],
            users: [{ name: 'u', user: {} }],
            contexts: [{ name: 'x', context: { cluster: 'c', user: 'u' } }],
            'current-context': 'x',
          }),
        );
        const runtime = new KubernetesRuntime({
          api: clientApi(offline),
          namespace,
          logger: pino({ level: 'silent' }),
        });
        return { runtime, close: () => runtime.close() };
      },
      cleanup: async () => {
        const left = await runtime.list({ [LABELS.managed]: 'true' }).catch(() => []);
        await Promise.all(
          left.map((w) => runtime.remove(w.workerId, { graceSeconds: 0 }).catch(() => undefined)),
        );
        await runtime.close();
        await kubelet.stop();
        await standIn?.close();
      },
    };
  });
}

contract('kubernetes (stand-in API server)', async () => {
  const standIn = new KubeStandIn();
  await standIn.start();
  // The node the test kubelet binds pods to: a pod's log is its node's kubelet's, as on a real API server. Its GPU
  // makes it a node prepareImage pulls onto.
  standIn.addNode({
    metadata: { name: 'test-node-1' },
    spec: {},
    status: { allocatable: { 'nvidia.com/gpu': '1' } },
  });
  const config = new KubeConfig();
  config.loadFromString(standIn.kubeconfig());
  return { config, namespace: 'corral-workers', standIn };
});

const realKubeconfig = process.env.CORRAL_TEST_KUBECONFIG;
if (realKubeconfig) {
  contract('kubernetes (CORRAL_TEST_KUBECONFIG)', async () => {
    const config = new KubeConfig();
    config.loadFromFile(realKubeconfig);
    return {
      config,
      namespace: process.env.CORRAL_TEST_NAMESPACE ?? 'corral-test',
      // The API server asks the pod's node's kubelet for pods/log and a metrics server for metrics.k8s.io; the test
      // kubelet is neither (its node is no Node object: the API server answers 404 for it).
      noLogsOrStats:
        'needs a real node: pods/log is served by the kubelet and metrics.k8s.io by a metrics server, which the test kubelet is not',
    };
  });
} else {
  describe.skip('WorkerRuntime contract: kubernetes (CORRAL_TEST_KUBECONFIG)', () => {
    it('needs a real API server: set CORRAL_TEST_KUBECONFIG to a kubeconfig (and CORRAL_TEST_NAMESPACE)', () =>
      undefined);
  });
}
