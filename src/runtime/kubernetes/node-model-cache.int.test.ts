/**
 * The Kubernetes runtime's model cache (node-model-cache.ts) over the API stand-in, with two real node agents
 * (`corral node`, built in dist/) as two GPU nodes (127.0.0.1 and 127.0.0.2, one port, as hostNetwork agents are)
 * and the hub stand-in: an ensure fills both nodes' caches, reports their bytes summed while it runs, and labels both
 * nodes as holding the model; a gated model the nodes hold is refused to a token without access; a node whose agent
 * does not answer is unlabelled while the other takes the model.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { type HubStandIn, startHubStandIn } from '../../../test/support/hub-stand-in.js';
import { type StandInCluster, standInCluster } from '../../../test/support/kube-cluster.js';
import { type NodeAgentProcess, startNodeAgent } from '../../../test/support/node-agent-process.js';
import { modelRepoDir } from '../../domain/model-refs.js';
import type { ModelRef } from '../../domain/models.js';
import { type ModelProgress, ModelRefusedError } from '../../ports/model-cache.js';
import { clientApi } from './client-api.js';
import { KubernetesRuntime } from './kubernetes-runtime.js';
import { modelNodeLabel } from './pod-spec.js';

const NS = 'corral-workers';
const TOKEN = `agent-${randomUUID()}`;
const LARGE = 'corral-test/cluster-large';
const GATED = 'corral-test/cluster-gated';
const LONE = 'corral-test/cluster-lone';
const GRANTED = `hf_granted_${randomUUID().slice(0, 8)}`;
const NOT_GRANTED = 'hf_not_granted';
const NODES = [
  { name: 'gpu-a', address: '127.0.0.1' },
  { name: 'gpu-b', address: '127.0.0.2' },
];

const ref = (name: string): ModelRef => ({ name, revision: 'main', allowPatterns: [], tokenSecret: null });

let hub: HubStandIn;
let cluster: StandInCluster;
let root: string;
let runtime: KubernetesRuntime;
const agents: NodeAgentProcess[] = [];

const cacheOf = (node: string) => path.join(root, node, 'hub');
const labelsOf = (node: string) =>
  cluster.standIn.nodes().find((n) => n.metadata?.name === node)?.metadata?.labels;

beforeAll(async () => {
  root = mkdtempSync(path.join(os.tmpdir(), 'corral-node-model-cache-'));
  hub = await startHubStandIn({
    models: [
      { name: LARGE, weightBytes: 30_000_000, shards: 2 },
      { name: GATED, weightBytes: 1_000_000, access: { kind: 'gated', tokens: [GRANTED] } },
      { name: LONE, weightBytes: 1_000_000 },
    ],
    tokens: [NOT_GRANTED],
  });
  cluster = await standInCluster({ namespace: NS });
  let port = 0;
  for (const node of NODES) {
    cluster.standIn.addNode({
      metadata: { name: node.name, labels: { 'nvidia.com/gpu.product': 'h100' } },
      status: {
        allocatable: { 'nvidia.com/gpu': '1' },
        addresses: [{ type: 'InternalIP', address: node.address }],
      },
    });
    const agent = await startNodeAgent({ kind: 'v2', root }, TOKEN, {
      listen: node.address,
      port,
      args: ['--model-cache-dir', cacheOf(node.name), '--hub-url', hub.url],
    });
    port = agent.port;
    agents.push(agent);
  }
  runtime = new KubernetesRuntime({
    api: clientApi(cluster.config),
    namespace: NS,
    installationId: `nm-${randomUUID().slice(0, 8)}`,
    logger: pino({ level: 'silent' }),
    products: ['h100'],
    pods: { terminationGraceSeconds: 1 },
    watchBackoff: { initialMs: 20, maxMs: 100 },
    nodeAgent: { port, token: TOKEN, models: { hubDir: '/var/lib/corral/models/hub', hubUrl: hub.url } },
  });
  await runtime.start();
});

afterAll(async () => {
  await runtime?.close();
  for (const agent of agents) await agent.stop();
  await cluster?.close();
  await hub?.close();
  rmSync(root, { recursive: true, force: true });
});

describe("the GPU nodes' model caches through their node agents", () => {
  it('fills every GPU node, reports their bytes summed, and labels each node that holds the model', async () => {
    const cache = runtime.modelCache;
    if (!cache) throw new Error('the runtime has no node model cache');
    hub.setBytesPerSecond(15_000_000);
    const seen: ModelProgress[] = [];
    const cached = await cache.ensure(ref(LARGE), null, (progress) => seen.push(progress));
    hub.setBytesPerSecond(null);
    expect(cached).toMatchObject({
      name: LARGE,
      commit: (await hub.describe(LARGE)).commit,
      repoDir: `/var/lib/corral/models/hub/${modelRepoDir(LARGE)}`,
    });
    // Both nodes' bytes against the model on both: a wait the worker's `downloading` message shows.
    const midway = seen.find((p) => p.bytesDone > 0 && p.bytesDone < p.bytesTotal);
    expect(midway?.bytesTotal).toBe(2 * cached.bytes);
    const label = modelNodeLabel(modelRepoDir(LARGE));
    for (const node of NODES) {
      expect(existsSync(path.join(cacheOf(node.name), modelRepoDir(LARGE), 'refs', 'main'))).toBe(true);
      expect(labelsOf(node.name)).toMatchObject({ [label]: 'true' });
    }
  });

  it('refuses a gated model the nodes hold to an owner without access', async () => {
    const cache = runtime.modelCache;
    if (!cache) throw new Error('the runtime has no node model cache');
    await cache.ensure(ref(GATED), GRANTED);
    for (const token of [NOT_GRANTED, null]) {
      const refused = await cache.ensure(ref(GATED), token).catch((error: unknown) => error);
      expect(refused).toBeInstanceOf(ModelRefusedError);
      expect((refused as ModelRefusedError).refusal.code).toBe('MODEL_GATED');
    }
  });

  it('takes the model on the nodes whose agent answers, and unlabels the others', async () => {
    const cache = runtime.modelCache;
    if (!cache) throw new Error('the runtime has no node model cache');
    const label = modelNodeLabel(modelRepoDir(LONE));
    // gpu-b was labelled for another revision of the model; its agent is gone now.
    cluster.standIn.patchNode('gpu-b', { metadata: { labels: { [label]: 'true' } } });
    await agents[1]?.stop();
    const cached = await cache.ensure(ref(LONE), null);
    expect(cached.name).toBe(LONE);
    expect(labelsOf('gpu-a')).toMatchObject({ [label]: 'true' });
    expect(labelsOf('gpu-b')?.[label]).toBeUndefined();
  });
});
