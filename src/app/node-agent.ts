/**
 * `corral node`, the node agent a DaemonSet runs on every Kubernetes node (docs/kubernetes.md, Idle tiers): the
 * pods' cgroup hierarchy found under the node's cgroup root, the GPU checkpointer where the node's driver has the
 * API (`--gpus auto`), the node's model cache (`HubModelCache` on the hostPath the worker pods mount, fetching from
 * `--hub-url`, within `--model-disk-budget-gb`; docs/models.md), and the agent's HTTP server on the node's address,
 * behind the shared token.
 */
import type { AddressInfo } from 'node:net';
import type { Logger } from 'pino';
import { HubModelCache } from '../models/hub-cache.js';
import { HubClient } from '../models/hub-client.js';
import { NodeAgentServer } from '../node/agent-server.js';
import { ModelLocks } from '../node/model-lock.js';
import { type CgroupVersionChoice, podHierarchy } from '../node/pod-cgroups.js';
import { PodTiers } from '../node/pod-tiers.js';
import { systemClock } from '../ports/clock.js';

export {
  DEFAULT_NODE_AGENT_PORT,
  DEFAULT_NODE_MODEL_CACHE_DIR,
} from '../runtime/kubernetes/node-agent-protocol.js';

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
  /** The node's hub cache directory (the hostPath worker pods mount their models from). */
  modelCacheDir: string;
  /** The hub models are fetched from (`HF_ENDPOINT`; Corral's `models.hubUrl` must name the same). */
  hubUrl: string;
  /** Bytes the node's cache may hold before it evicts models no endpoint names; null: no budget. */
  modelDiskBudgetBytes: number | null;
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
  const locks = new ModelLocks({ hubDir: config.modelCacheDir });
  // The models endpoints name, as Corral's latest ensure said them (the agent cannot read Corral's store): the
  // budget's eviction runs only at the end of an ensure, so it always has a set sent with one.
  let named: ReadonlySet<string> = new Set();
  const cache = new HubModelCache({
    hubDir: config.modelCacheDir,
    client: new HubClient({ hubUrl: config.hubUrl }),
    clock: systemClock,
    logger: logger.child({ component: 'model-cache' }),
    diskBudgetBytes: config.modelDiskBudgetBytes,
    namedModels: async () => named,
    removing: (name, removal) => locks.tryHold(name, removal),
  });
  const server = new NodeAgentServer({
    tiers,
    token: config.token,
    logger,
    models: {
      cache,
      hubUrl: config.hubUrl,
      locks,
      tellNamed: (names) => {
        named = names;
      },
    },
  });
  const address = await server.listen(config.host, config.port);
  logger.info(
    {
      address: `${address.address}:${address.port}`,
      cgroup: hierarchy.kind,
      cgroupRoot: hierarchy.root,
      suspend: tiers.suspendable.available ? 'available' : tiers.suspendable.reason,
      modelCacheDir: config.modelCacheDir,
      modelDiskBudgetBytes: config.modelDiskBudgetBytes,
      hubUrl: config.hubUrl,
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
