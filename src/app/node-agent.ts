/**
 * `corral node`, the node agent a DaemonSet runs on every Kubernetes node (docs/kubernetes.md, Idle tiers): the
 * pods' cgroup hierarchy found under the node's cgroup root, the GPU checkpointer where the node's driver has the
 * API (`--gpus auto`), and the agent's HTTP server on the node's address, behind the shared token.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { NodeAgentServer } from '../node/agent-server.js';
import { type CgroupVersionChoice, podHierarchy } from '../node/pod-cgroups.js';
import { PodTiers } from '../node/pod-tiers.js';
import { systemClock } from '../ports/clock.js';

export { DEFAULT_NODE_AGENT_PORT } from '../runtime/kubernetes/node-agent-protocol.js';

import { gpuCheckpointFor } from './gpu-checkpoint.js';

export interface NodeAgentConfig {
  host: string;
  port: number;
  token: string;
  /** The node's cgroup filesystem as the agent sees it (the host's /sys/fs/cgroup, mounted). */
  cgroupRoot: string;
  cgroupVersion: CgroupVersionChoice;
  /** `auto`: ask the driver for its checkpoint API (the suspended tier); `none`: freeze only. */
  gpus: 'auto' | 'none';
}

export interface RunningNodeAgent {
  address: AddressInfo;
  close(): Promise<void>;
}

export async function runNodeAgent(config: NodeAgentConfig, logger: Logger): Promise<RunningNodeAgent> {
  const hierarchy = podHierarchy(config.cgroupRoot, config.cgroupVersion);
  const gpu =
    config.gpus === 'auto'
      ? await gpuCheckpointFor({ gpus: { kind: 'auto' }, runtime: 'node', logger })
      : undefined;
  const tiers = new PodTiers({ hierarchy, checkpointer: gpu?.checkpointer, clock: systemClock, logger });
  const server = new NodeAgentServer({ tiers, token: config.token, logger });
  const address = await server.listen(config.host, config.port);
  logger.info(
    {
      address: `${address.address}:${address.port}`,
      cgroup: hierarchy.kind,
      cgroupRoot: hierarchy.root,
      suspend: tiers.suspendable.available ? 'available' : tiers.suspendable.reason,
    },
    'node agent listening',
  );
  return {
    address,
    close: async () => {
      await server.close();
      gpu?.close();
    },
  };
}
