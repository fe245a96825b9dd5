/**
 * The Kubernetes runtime's model cache (node-model-cache.ts) over the API stand-in, with two real node agents
 * (`corral node`, built in dist/) as two GPU nodes (127.0.0.1 and 127.0.0.2, one port, as hostNetwork agents are)
 * and the hub stand-in: an ensure fills both nodes' caches, reports their bytes summed while it runs, and labels both
 * nodes as holding the model; a gated model the nodes hold is refused to a token without access; the agents' disk
 * budgets evict a model no endpoint names (the runtime's named models sent with each ensure), which is unlabelled and
 * told as removed; each node's models are listed by node; a removal empties and unlabels every node; a node whose
 * agent does not answer is unlabelled while the other takes the model, and named by a removal as unreachable.
 */
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { type HubStandIn, startHubStandIn } from '../../../test/support/hub-stand-in.js';
import { type StandInCluster, standInCluster } from '../../../test/support/kube-cluster.js';
import { type NodeAgentProcess, startNodeAgent } from '../../../test/support/node-agent-process.js';
import { modelRepoDir } from '../../domain/model-refs.js';
import type { ModelRef } from '../../domain/models.js';
import { type ModelProgress, ModelRefusedError } from '../../ports/model-cache.js';
import { RuntimeError } from '../types.js';
import { clientApi } from './client-api.js';
import { KubernetesRuntime } from './kubernetes-runtime.js';
import { modelNodeLabel } from './pod-spec.js';

const NS = 'corral-workers';
const TOKEN = `agent-${randomUUID()}`;
const LARGE = 'corral-test/cluster-large';
const GATED = 'corral-test/cluster-gated';
const LONE = 'corral-test/cluster-lone';
/** 10 MB: with LARGE (30 MB) and GATED (1 MB) over the agents' budget of 35 MB. */
const EVICTOR = 'corral-test/cluster-evictor';
/** 1 MB: emptied from both nodes' caches while they keep its label. */
const LOST = 'corral-test/cluster-lost';
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
/** The models endpoints name, as the runtime's store would say them. */
let named = new Set<string>();
const removed: string[] = [];

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
      { name: EVICTOR, weightBytes: 10_000_000 },
      { name: LOST, weightBytes: 1_000_000 },
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
      args: [
        '--model-cache-dir',
        cacheOf(node.name),
        '--hub-url',
        hub.url,
        '--model-disk-budget-gb',
        '0.035',
      ],
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
    namedModels: async () => named,
  });
  await runtime.start();
  runtime.modelCache?.onRemoved((name) => removed.push(name));
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

  it("evicts by the nodes' budgets a model no endpoint names, unlabels it and tells it; lists each node's models", async () => {
    const cache = runtime.modelCache;
    if (!cache) throw new Error('the runtime has no node model cache');
    // LARGE is the least recently used, but named; GATED is the next one and is not.
    named = new Set([LARGE]);
    await cache.ensure(ref(EVICTOR), null);
    const gated = modelNodeLabel(modelRepoDir(GATED));
    for (const node of NODES) {
      expect(existsSync(path.join(cacheOf(node.name), modelRepoDir(GATED)))).toBe(false);
      expect(labelsOf(node.name)?.[gated]).toBeUndefined();
      expect(labelsOf(node.name)).toMatchObject({ [modelNodeLabel(modelRepoDir(LARGE))]: 'true' });
    }
    expect(removed).toContain(GATED);
    const listed = await cache.listMachines();
    expect(listed.map((m) => `${m.machine} ${m.name}`).sort()).toEqual(
      NODES.flatMap((n) => [`${n.name} ${EVICTOR}`, `${n.name} ${LARGE}`]).sort(),
    );
  });

  it('removes a model from every node and unlabels them', async () => {
    const cache = runtime.modelCache;
    if (!cache) throw new Error('the runtime has no node model cache');
    removed.length = 0;
    expect(await cache.removeEverywhere(EVICTOR)).toEqual({ removal: 'removed', unreachable: [] });
    const label = modelNodeLabel(modelRepoDir(EVICTOR));
    for (const node of NODES) {
      expect(existsSync(path.join(cacheOf(node.name), modelRepoDir(EVICTOR)))).toBe(false);
      expect(labelsOf(node.name)?.[label]).toBeUndefined();
    }
    expect(removed).toContain(EVICTOR);
    expect(await cache.removeEverywhere(EVICTOR)).toEqual({ removal: 'not_cached', unreachable: [] });
  });

  it('finds a node whose cache lost a model it is labelled for, unlabels it, and fills only that node', async () => {
    const cache = runtime.modelCache;
    if (!cache) throw new Error('the runtime has no node model cache');
    const label = modelNodeLabel(modelRepoDir(LARGE));
    removed.length = 0;
    // gpu-a's agent restarted on an emptied disk: its node keeps the label.
    rmSync(path.join(cacheOf('gpu-a'), modelRepoDir(LARGE)), { recursive: true, force: true });
    expect(labelsOf('gpu-a')).toMatchObject({ [label]: 'true' });
    await cache.confirmHeld([LARGE]);
    expect(labelsOf('gpu-a')?.[label]).toBeUndefined();
    expect(labelsOf('gpu-b')).toMatchObject({ [label]: 'true' });
    expect(removed).toEqual([LARGE]);
    await vi.waitFor(() => expect(cache.lacking({ name: LARGE })).toBe(true), { timeout: 5_000 });
    const modelInfos = () =>
      hub.requests.filter((r) => r.server === 'hub' && r.path.startsWith(`/api/models/${LARGE}/revision/`))
        .length;
    const before = modelInfos();
    expect(await cache.fillLacking(ref(LARGE), null)).toEqual(['gpu-a']);
    expect(existsSync(path.join(cacheOf('gpu-a'), modelRepoDir(LARGE), 'refs', 'main'))).toBe(true);
    expect(labelsOf('gpu-a')).toMatchObject({ [label]: 'true' });
    // gpu-b, which holds it, was not asked: one agent resolved the model on the hub.
    expect(modelInfos() - before).toBe(1);
  });

  it('refuses to make a pod for a model that every labelled node lost, and unlabels them', async () => {
    const cache = runtime.modelCache;
    if (!cache) throw new Error('the runtime has no node model cache');
    await cache.ensure(ref(LOST), null);
    const label = modelNodeLabel(modelRepoDir(LOST));
    await vi.waitFor(() => expect(cache.lacking({ name: LOST })).toBe(false), { timeout: 5_000 });
    removed.length = 0;
    for (const node of NODES)
      rmSync(path.join(cacheOf(node.name), modelRepoDir(LOST)), { recursive: true, force: true });
    const refused = await cache.confirmHeld([LARGE, LOST]).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(RuntimeError);
    expect((refused as RuntimeError).message).toContain(`model ${LOST} is no longer in any GPU node's cache`);
    for (const node of NODES) {
      expect(labelsOf(node.name)?.[label]).toBeUndefined();
      expect(labelsOf(node.name)).toMatchObject({ [modelNodeLabel(modelRepoDir(LARGE))]: 'true' });
    }
    expect(removed).toEqual([LOST, LOST]);
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
    const removal = await cache.removeEverywhere(LONE);
    expect(removal.removal).toBe('removed');
    expect(removal.unreachable.map((u) => u.machine)).toEqual(['gpu-b']);
  });
});
