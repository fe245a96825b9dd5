/**
 * The Kubernetes runtime's idle tiers through a real node agent process (`corral node`, built in dist/) on this
 * machine's cgroups: the API stand-in, the test as the kubelet putting each pod's process in a cgroup laid out as
 * the kubelet's cgroupfs driver lays it out, and the agent at the pod's host IP (127.0.0.1). A frozen pod answers
 * nothing and keeps its GPU in the cluster's count; thawed, it answers again; after a restart, the next runtime
 * finds it frozen by asking the agent. Where no agent answers, or one refuses
 * the token, the freeze fails UNAVAILABLE naming the node (the controller then removes the worker, tier-moves.ts).
 */
import { randomUUID } from 'node:crypto';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type StandInCluster,
  standInCluster,
  standInWorkerSpec,
} from '../../../test/support/kube-cluster.js';
import { type NodeAgentProcess, startNodeAgent } from '../../../test/support/node-agent-process.js';
import { removeTestHierarchy, testPodHierarchy } from '../../../test/support/pod-cgroups.js';
import { eventually } from '../../../test/support/runtime-contract.js';
import type { PodHierarchy } from '../../node/pod-cgroups.js';
import { idleTiersOff } from '../idle-tiers.js';
import { clientApi } from './client-api.js';
import { KubernetesRuntime } from './kubernetes-runtime.js';

const NS = 'corral-workers';
const TOKEN = `agent-${randomUUID()}`;
const v2 = testPodHierarchy('v2');
const found = 'skip' in v2 ? testPodHierarchy('v1') : v2;
const skip = 'skip' in found ? found.skip : undefined;
const hierarchy = found as PodHierarchy;

describe.skipIf(skip !== undefined)('the Kubernetes runtime frozen through a real node agent', () => {
  let cluster: StandInCluster;
  let agent: NodeAgentProcess;
  const runtimes: KubernetesRuntime[] = [];

  function runtimeWith(
    nodeAgent?: { port: number; token: string },
    installationId = `na-${randomUUID().slice(0, 8)}`,
  ): KubernetesRuntime {
    const runtime = new KubernetesRuntime({
      api: clientApi(cluster.config),
      namespace: NS,
      installationId,
      logger: pino({ level: 'silent' }),
      products: ['h100'],
      pods: { terminationGraceSeconds: 1 },
      watchBackoff: { initialMs: 20, maxMs: 100 },
      ...(nodeAgent ? { nodeAgent } : {}),
    });
    runtimes.push(runtime);
    return runtime;
  }

  beforeAll(async () => {
    cluster = await standInCluster({ namespace: NS, podCgroups: { hierarchy, driver: 'cgroupfs' } });
    cluster.standIn.addNode({
      metadata: { name: 'test-node-1', labels: { 'nvidia.com/gpu.product': 'h100' } },
      status: { allocatable: { 'nvidia.com/gpu': '2' } },
    });
    agent = await startNodeAgent(hierarchy, TOKEN);
  });

  afterAll(async () => {
    for (const runtime of runtimes) {
      for (const w of await runtime.list({}).catch(() => []))
        await runtime.remove(w.workerId, { graceSeconds: 0 }).catch(() => undefined);
      await runtime.close();
    }
    await agent?.stop();
    await cluster?.close();
    await removeTestHierarchy(hierarchy);
  });

  it('freezes a pod in place (it answers nothing, keeps its GPU), lists it frozen, and thaws it', async () => {
    const runtime = runtimeWith({ port: agent.port, token: TOKEN });
    await runtime.start();
    expect(idleTiersOff(runtime)).toBeUndefined();
    const tiers = runtime.idleTiers;
    if (!tiers) throw new Error('no idle tiers with the agent configured');
    expect(tiers.suspendable).toMatchObject({ available: false });
    const id = `w-${randomUUID().slice(0, 8)}`;
    const worker = await runtime.create(
      standInWorkerSpec(id, { placement: { product: 'h100', gpuNum: 1, authId: '' } }),
    );
    const { host, port } = worker.address ?? { host: '', port: 0 };
    const health = () => fetch(`http://${host}:${port}/health`, { signal: AbortSignal.timeout(1_000) });
    await eventually(async () => expect((await health()).status).toBe(200));
    await eventually(() => expect(runtime.gpuScheduler.products()[0]).toMatchObject({ gpusFree: 1 }));

    await tiers.freeze(id);
    expect(await runtime.inspect(id)).toMatchObject({ phase: 'running', tier: 'frozen' });
    await expect(health()).rejects.toThrow();
    // The pod is not deleted: it still holds its nvidia.com/gpu, and the cluster's count says so.
    expect(runtime.pod(id)?.metadata?.deletionTimestamp).toBeUndefined();
    expect(runtime.gpuScheduler.products()[0]).toMatchObject({ gpusTotal: 2, gpusFree: 1 });
    expect(agent.output()).not.toContain(TOKEN);

    await tiers.thaw(id);
    expect((await runtime.inspect(id))?.tier).toBeUndefined();
    expect((await health()).status).toBe(200);
    // A frozen pod is removed as any other.
    await tiers.freeze(id);
    await runtime.remove(id, { graceSeconds: 1 });
    expect(await runtime.inspect(id)).toBeUndefined();
  });

  it('a pod frozen when Corral was killed is listed frozen by the next one (its agent asked), kept, and thaws', async () => {
    const installation = `na-${randomUUID().slice(0, 8)}`;
    const first = runtimeWith({ port: agent.port, token: TOKEN }, installation);
    await first.start();
    const id = `w-${randomUUID().slice(0, 8)}`;
    const worker = await first.create(standInWorkerSpec(id));
    const { host, port } = worker.address ?? { host: '', port: 0 };
    const health = () => fetch(`http://${host}:${port}/health`, { signal: AbortSignal.timeout(1_000) });
    await eventually(async () => expect((await health()).status).toBe(200));
    await first.idleTiers?.freeze(id);
    // Killed: nothing thawed, nothing removed; the pod stays frozen in its cgroup.
    await first.close();

    const second = runtimeWith({ port: agent.port, token: TOKEN }, installation);
    await second.start();
    expect((await second.list({})).find((w) => w.workerId === id)).toMatchObject({
      phase: 'running',
      tier: 'frozen',
    });
    expect(second.pod(id)?.metadata?.deletionTimestamp).toBeUndefined();
    await expect(health()).rejects.toThrow();
    await second.idleTiers?.thaw(id);
    expect((await second.inspect(id))?.tier).toBeUndefined();
    expect((await health()).status).toBe(200);
  });

  it('where no agent answers on the node, or one refuses the token, a freeze fails UNAVAILABLE naming the node', async () => {
    const id = `w-${randomUUID().slice(0, 8)}`;
    const installation = `na-${randomUUID().slice(0, 8)}`;
    const nobody = runtimeWith({ port: 1, token: TOKEN }, installation);
    await nobody.start();
    await nobody.create(standInWorkerSpec(id));
    await expect(nobody.idleTiers?.freeze(id)).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: expect.stringContaining('no node agent answers on node test-node-1 (127.0.0.1:1)'),
    });
    const wrong = runtimeWith({ port: agent.port, token: 'not-the-token' }, installation);
    await wrong.start();
    await eventually(() => expect(wrong.pod(id)).toBeDefined());
    await expect(wrong.idleTiers?.freeze(id)).rejects.toMatchObject({
      code: 'UNAVAILABLE',
      message: expect.stringContaining('NODE_AGENT_UNAUTHENTICATED'),
    });
    expect((await nobody.inspect(id))?.tier).toBeUndefined();
  });

  it('without the agent configured there are no idle tiers, and the refusal names the agent', () => {
    const runtime = runtimeWith();
    expect(runtime.idleTiers).toBeUndefined();
    expect(idleTiersOff(runtime)).toContain('no node agent configured');
  });
});
