/**
 * A worker network for tests of the worker-facing listener on Docker: a bridge named like Corral's (`crl` + hex,
 * so the host guard's chain applies to it), inter-container traffic off; and its gateway address.
 */
import type Docker from 'dockerode';
import { firstHost } from '../../src/runtime/docker/listener-network.js';
import { corralBridge } from '../../src/runtime/docker/sandbox.js';
import { LABELS } from '../../src/runtime/types.js';

export async function createWorkerNetwork(docker: Docker, name: string): Promise<{ gateway: string }> {
  await docker.createNetwork(corralBridge(name, { [LABELS.managed]: 'true' }));
  const inspected = (await docker.getNetwork(name).inspect()) as {
    IPAM: { Config: { Subnet: string; Gateway?: string }[] };
  };
  const config = inspected.IPAM.Config[0];
  return { gateway: config?.Gateway ?? firstHost(config?.Subnet ?? '') ?? '' };
}

export async function removeNetworks(docker: Docker, names: string[]): Promise<void> {
  for (const name of names) {
    await docker
      .getNetwork(name)
      .remove()
      .catch(() => undefined);
  }
}
