/**
 * What one installation left on a Docker engine, found by its label (`corral.dev/installation`): its workers'
 * containers, its networks (worker networks and its listener's) and its volumes; and their removal, containers
 * first (a network in use cannot go). For `corral cleanup`; I/O only.
 */
import type Dockerode from 'dockerode';
import { LABELS } from '../types.js';
import { isNotFound, reasonOf } from './engine-errors.js';

export interface Leftover {
  kind: 'container' | 'network' | 'volume';
  name: string;
}

/** Everything labelled with the installation's id, containers first, then networks, then volumes. */
export async function installationLeftovers(docker: Dockerode, installationId: string): Promise<Leftover[]> {
  const filters = { label: [`${LABELS.installation}=${installationId}`] };
  const containers = await docker.listContainers({ all: true, filters });
  const networks = await docker.listNetworks({ filters });
  const volumes = (await docker.listVolumes({ filters })).Volumes ?? [];
  return [
    ...containers.map((c) => ({ kind: 'container' as const, name: (c.Names[0] ?? c.Id).replace(/^\//, '') })),
    ...networks.map((n) => ({ kind: 'network' as const, name: n.Name })),
    ...volumes.map((v) => ({ kind: 'volume' as const, name: v.Name })),
  ];
}

/** Removes one leftover; undefined when it is gone (or was already), else why not. */
export async function removeLeftover(docker: Dockerode, leftover: Leftover): Promise<string | undefined> {
  try {
    if (leftover.kind === 'container')
      await docker.getContainer(leftover.name).remove({ force: true, v: true });
    else if (leftover.kind === 'network') await docker.getNetwork(leftover.name).remove();
    else await docker.getVolume(leftover.name).remove();
    return undefined;
  } catch (error) {
    return isNotFound(error) ? undefined : reasonOf(error);
  }
}
