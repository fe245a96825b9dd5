/**
 * The worker-facing listener's address on Docker: a bridge network of its own (no container joins it), made once
 * per installation and reused at every later start, whose gateway address is the host's and stays put while worker networks come and go. Every
 * worker network reaches it (the host takes a packet for any of its addresses from any bridge) through the one hole
 * the host guard opens for it (firewall-rules.ts). I/O only.
 */
import type Dockerode from 'dockerode';
import type { Logger } from 'pino';
import { LABEL_PREFIX, LABELS } from '../types.js';
import { isNotFound } from './engine-errors.js';
import { createNetworkOnFreeSubnet, type SubnetPool } from './network-create.js';
import { corralBridge } from './sandbox.js';
import { firstHost } from './subnet-pool.js';

/** Marks the listener's network, so that nothing mistakes it for a worker network (none prunes it). */
export const LISTENER_NETWORK_LABEL = `${LABEL_PREFIX}worker-listener`;

/** The network's name for an installation. */
export function listenerNetworkName(installationId: string): string {
  return `corral-listener-${installationId
    .toLowerCase()
    .replace(/[^a-z0-9]/g, '')
    .slice(0, 12)}`;
}

interface NetworkIpam {
  IPAM?: { Config?: { Subnet?: string; Gateway?: string }[] };
}

function gatewayOf(network: NetworkIpam): string | undefined {
  for (const config of network.IPAM?.Config ?? []) {
    const gateway = config.Gateway ?? (config.Subnet ? firstHost(config.Subnet) : undefined);
    if (gateway && !gateway.includes(':')) return gateway;
  }
  return undefined;
}

/**
 * The listener network's gateway address, the network made first when it does not exist: on a block of the
 * subnet pool when one is configured, else where Docker chooses. Replicas of one installation may start together:
 * whichever makes it, every one ends with the same network, made once and kept for later starts (`corral cleanup`
 * removes it).
 */
export async function ensureListenerNetwork(options: {
  docker: Dockerode;
  installationId: string;
  subnets: SubnetPool;
  logger: Logger;
}): Promise<string> {
  const { docker, installationId, subnets, logger } = options;
  const name = listenerNetworkName(installationId);
  const inspect = () =>
    docker
      .getNetwork(name)
      .inspect()
      .catch((error: unknown) => {
        if (isNotFound(error)) return undefined;
        throw error;
      }) as Promise<NetworkIpam | undefined>;
  const existing = await inspect();
  if (existing) return gatewayIn(name, existing);
  const created = await createNetworkOnFreeSubnet({
    docker,
    network: corralBridge(name, {
      [LABELS.managed]: 'true',
      [LABELS.installation]: installationId,
      [LISTENER_NETWORK_LABEL]: 'true',
    }),
    subnets,
    // Said in the network's record, where the inspect below reads it (the engine leaves it out otherwise).
    withGateway: true,
    purpose: "the worker-facing listener's network",
  });
  const made = await inspect();
  if (!made) throw new Error(`the Docker network ${name} was removed while it was made`);
  const address = gatewayIn(name, made);
  if (created.outcome === 'made')
    logger.info({ network: name, address }, 'worker-facing listener network ready');
  return address;
}

function gatewayIn(name: string, network: NetworkIpam): string {
  const gateway = gatewayOf(network);
  if (gateway) return gateway;
  throw new Error(`the Docker network ${name} has no IPv4 gateway; remove it and start again`);
}
