/**
 * How a Docker worker is confined, as engine request bodies: the HostConfig fields of the sandbox (capabilities,
 * no-new-privileges, pids, log rotation) and the bridge network a worker joins. Pure: tested by tables.
 */
import { createHash } from 'node:crypto';
import type { HostConfig, NetworkCreateOptions } from 'dockerode';
import type { WorkerSandbox } from '../../config/config.js';
import { LABEL_PREFIX, LABELS, type WorkerSpec } from '../types.js';

/** On a worker's container: the name of the network it joined (its removal may leave the network unused). */
export const NETWORK_LABEL = `${LABEL_PREFIX}network`;
/** On a worker network: whom it is for, `owner` or `endpoint`. */
export const ISOLATION_LABEL = `${LABEL_PREFIX}isolation`;

/**
 * Every bridge Corral makes is named `crl<12 hex>` (Linux allows 15 characters), so that one iptables rule with
 * the wildcard `crl+` covers the bridges of every worker network, present and future.
 */
export const BRIDGE_PREFIX = 'crl';

/** The sandbox's part of a container's HostConfig. */
export function sandboxHostConfig(
  sandbox: WorkerSandbox,
  network: string | undefined,
): Pick<HostConfig, 'CapDrop' | 'CapAdd' | 'SecurityOpt' | 'PidsLimit' | 'LogConfig' | 'NetworkMode'> {
  return {
    CapDrop: ['ALL'],
    CapAdd: [...sandbox.capAdd],
    // setuid binaries inside the image (su, sudo, ping) gain nothing: a process never gets more than it started with.
    SecurityOpt: ['no-new-privileges:true'],
    ...(sandbox.pidsLimit > 0 ? { PidsLimit: sandbox.pidsLimit } : {}),
    LogConfig: {
      Type: 'json-file',
      Config: { 'max-size': `${sandbox.log.maxSizeMB}m`, 'max-file': String(sandbox.log.maxFiles) },
    },
    ...(network === undefined ? {} : { NetworkMode: network }),
  };
}

/** The body of `POST /networks/create` for a worker network, with its name. */
export type WorkerNetwork = NetworkCreateOptions & { Name: string; Labels: Record<string, string> };

/**
 * The network a worker joins: one per owner or per endpoint, as the sandbox says; undefined for `none` (Docker's
 * default bridge). Inter-container traffic is off, so workers on one network do not reach each other either; the
 * gateway reaches them through their ports published on the host.
 */
export function workerNetwork(
  spec: Pick<WorkerSpec, 'ownerId' | 'endpointId'> & Partial<Pick<WorkerSpec, 'labels'>>,
  sandbox: Pick<WorkerSandbox, 'networkIsolation'>,
  namePrefix: string,
): WorkerNetwork | undefined {
  const isolation = sandbox.networkIsolation;
  if (isolation === 'none') return undefined;
  const id = isolation === 'owner' ? spec.ownerId : spec.endpointId;
  // Two installations on one engine never share (or prune) a network: the digest covers the installation too.
  const installation = spec.labels?.[LABELS.installation];
  const key = installation === undefined ? id : `${installation}/${id}`;
  const name = `${namePrefix}${isolation}-${slug(id)}-${digest(key).slice(0, 8)}`;
  return corralBridge(
    name,
    {
      [LABELS.managed]: 'true',
      [ISOLATION_LABEL]: isolation,
      [LABELS.owner]: spec.ownerId,
      ...(installation === undefined ? {} : { [LABELS.installation]: installation }),
      ...(isolation === 'endpoint' ? { [LABELS.endpoint]: spec.endpointId } : {}),
    },
    // Workers download models: they keep their way out, through NAT.
    { 'com.docker.network.bridge.enable_ip_masquerade': 'true' },
  );
}

/** A bridge network of Corral's: its bridge named `crl` + hex (bridgeName), inter-container traffic off. */
export function corralBridge(
  name: string,
  labels: Record<string, string>,
  options: Record<string, string> = {},
): WorkerNetwork {
  return {
    Name: name,
    Driver: 'bridge',
    CheckDuplicate: true,
    Internal: false,
    Labels: labels,
    Options: {
      'com.docker.network.bridge.name': bridgeName(name),
      'com.docker.network.bridge.enable_icc': 'false',
      ...options,
    },
  };
}

export function bridgeName(networkName: string): string {
  return `${BRIDGE_PREFIX}${digest(networkName).slice(0, 12)}`;
}

/** Docker network names take [a-zA-Z0-9_.-]; the digest keeps two ids that slug alike apart. */
function slug(id: string): string {
  return (
    id
      .toLowerCase()
      .replace(/[^a-z0-9_.-]+/g, '-')
      .replace(/^[^a-z0-9]+/, '')
      .slice(0, 32) || 'x'
  );
}

function digest(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}
