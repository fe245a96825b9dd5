/**
 * A Kubernetes API stand-in (kube-stand-in.ts) with the test as its kubelet, and its scheduler where asked
 * (test-kubelet.ts), watching every Corral pod of the namespace: what the tests of the Kubernetes runtime and of the
 * controller over it start from.
 */
import { KubeConfig } from '@kubernetes/client-node';
import { labelSelector } from '../../src/runtime/kubernetes/api.js';
import { clientApi } from '../../src/runtime/kubernetes/client-api.js';
import { LABELS, type WorkerSpec } from '../../src/runtime/types.js';
import { KubeStandIn } from './kube-stand-in.js';
import { testWorkerSpec } from './runtime-contract.js';
import { TestKubelet, type TestKubeletOptions } from './test-kubelet.js';

export interface StandInCluster {
  standIn: KubeStandIn;
  /** The stand-in's kubeconfig, loaded. */
  config: KubeConfig;
  kubelet: TestKubelet;
  close(): Promise<void>;
}

export async function standInCluster(
  options: { namespace: string } & Partial<
    Pick<TestKubeletOptions, 'missingImages' | 'unschedulable' | 'scheduleOnNodes' | 'podCgroups'>
  >,
): Promise<StandInCluster> {
  const standIn = new KubeStandIn();
  await standIn.start();
  const config = new KubeConfig();
  config.loadFromString(standIn.kubeconfig());
  const kubelet = new TestKubelet({
    api: clientApi(config),
    config,
    namespace: options.namespace,
    labelSelector: labelSelector({ [LABELS.managed]: 'true' }),
    missingImages: options.missingImages ?? new Set(),
    standIn,
    ...(options.unschedulable ? { unschedulable: options.unschedulable } : {}),
    ...(options.scheduleOnNodes ? { scheduleOnNodes: options.scheduleOnNodes } : {}),
    ...(options.podCgroups ? { podCgroups: options.podCgroups } : {}),
  });
  await kubelet.start();
  return {
    standIn,
    config,
    kubelet,
    close: async () => {
      await kubelet.stop();
      await standIn.close();
    },
  };
}

/** A worker of endpoint ep1 on the test worker's image, placed on product h100 without GPUs unless `overrides` say. */
export function standInWorkerSpec(workerId: string, overrides: Partial<WorkerSpec> = {}): WorkerSpec {
  return testWorkerSpec({
    image: 'corral-test-worker:latest',
    workerId,
    endpointId: 'ep1',
    placement: { product: 'h100', gpuNum: 0, authId: '' },
    ...overrides,
  });
}
