/**
 * `corral serve --runtime kubernetes` with node agents, against the API stand-in (the test as the kubelet and the
 * scheduler), two real `corral node` processes as the agents of two GPU nodes (127.0.0.1 and 127.0.0.2, one port),
 * and the hub stand-in: a worker of an endpoint that names a model waits in `downloading` with the bytes of both
 * nodes summed while their agents fetch it into their nodes' caches, both nodes are labelled as holding it, and only
 * then is its pod made, requiring that label and mounting the model from the nodes' cache directory. With the agents
 * over their disk budget, the model an endpoint names is kept (the store's named models sent with each fetch).
 * `GET models`, `corral models list` and the dashboard's Models page (where Chromium is) then show the model on each
 * node, with the endpoint naming it; `DELETE models/...` is refused while the endpoint names it, and once it is
 * deleted removes the model from both nodes and their labels. `POST models` of a model no endpoint names fills both
 * nodes' caches and labels them (and not Corral's own cache, which no worker mounts here); a GPU node that joins after
 * a model was ready gets it when the model's next worker starts (the nodes that hold it not asked); nodes whose
 * caches were emptied while they kept their labels are unlabelled before a pod goes there, and the model fetched again.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { modelRepoDir } from '../../src/domain/model-refs.js';
import { labelSelector, type Node } from '../../src/runtime/kubernetes/api.js';
import { clientApi } from '../../src/runtime/kubernetes/client-api.js';
import { modelNodeLabel } from '../../src/runtime/kubernetes/pod-spec.js';
import { LABELS } from '../../src/runtime/types.js';
import { chromiumAvailable, openSuiteBrowser, signIn } from '../support/browser.js';
import { type HubStandIn, startHubStandIn } from '../support/hub-stand-in.js';
import { KubeStandIn } from '../support/kube-stand-in.js';
import { type NodeAgentProcess, startNodeAgent } from '../support/node-agent-process.js';
import {
  CORRAL_BIN,
  callApi,
  printServeLog,
  type ServeProcess,
  serveLogLines,
  startServe,
} from '../support/process.js';
import { TestKubelet } from '../support/test-kubelet.js';

const KEY = 'e2e-models-kubernetes-operator-0123';
const NS = 'corral-workers';
const MODEL = 'corral-test/kube-llm';
/** 60 MB: with MODEL's 100 MB over the agents' budget of 150 MB, so its fetch runs the nodes' eviction. */
const OTHER = 'corral-test/kube-other';
/** Pulled with `POST models`, named by no endpoint: 30 MB, within the budget beside OTHER's 60 MB left on the nodes. */
const PULLED = 'corral-test/kube-pulled';
const AGENT_TOKEN = `agent-${randomUUID()}`;
const NODES = [
  { name: 'gpu-a', address: '127.0.0.1' },
  { name: 'gpu-b', address: '127.0.0.2' },
];

function gpuNode(name: string, address: string): Node {
  return {
    metadata: {
      name,
      labels: { 'kubernetes.io/hostname': name, 'nvidia.com/gpu.product': 'NVIDIA-H100-80GB-HBM3' },
    },
    spec: {},
    status: {
      capacity: { cpu: '64', 'nvidia.com/gpu': '1', pods: '110' },
      allocatable: { cpu: '63', 'nvidia.com/gpu': '1', pods: '110' },
      addresses: [{ type: 'InternalIP', address }],
    },
  };
}

/** An endpoint of one worker of one GPU whose workers load `model`. */
function modelEndpoint(appName: string, model: string) {
  return {
    endpoint: {
      appName,
      image: { image: 'corral-test-worker:latest' },
      ports: [{ port: 8000 }],
      workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1 },
      healthy: { path: '/health' },
      products: [{ id: 'h100-80g' }],
      models: [{ name: model }],
    },
  };
}

describe('models on the kubernetes runtime with node agents, under corral serve', () => {
  let dataDir: string;
  let hub: HubStandIn;
  let standIn: KubeStandIn;
  let kubelet: TestKubelet;
  const agents: NodeAgentProcess[] = [];
  let server: ServeProcess | undefined;

  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  /** A GPU node in the API stand-in and its agent (the first agent's port: they listen on one port, as a DaemonSet's). */
  async function addNode(node: { name: string; address: string }): Promise<void> {
    standIn.addNode(gpuNode(node.name, node.address));
    const agent = await startNodeAgent({ kind: 'v2', root: dataDir }, AGENT_TOKEN, {
      listen: node.address,
      port: agents[0]?.port ?? 0,
      args: [
        '--model-cache-dir',
        join(dataDir, node.name),
        '--hub-url',
        hub.url,
        '--model-disk-budget-gb',
        '0.15',
      ],
    });
    agents.push(agent);
  }

  beforeAll(async () => {
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-k8s-models-'));
    hub = await startHubStandIn({
      models: [
        { name: MODEL, weightBytes: 100_000_000 },
        { name: OTHER, weightBytes: 60_000_000 },
        { name: PULLED, weightBytes: 30_000_000 },
      ],
    });
    standIn = new KubeStandIn();
    await standIn.start();
    for (const node of NODES) await addNode(node);
    const port = agents[0]?.port;
    writeFileSync(join(dataDir, 'kubeconfig'), standIn.kubeconfig());
    writeFileSync(join(dataDir, 'agent-token'), AGENT_TOKEN);
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      `models:\n  hubUrl: ${hub.url}\n` +
        'controller: { reconcileIntervalMs: 200 }\nquotas: { minGpus: unlimited, maxGpus: unlimited }\n' +
        'products: [{ id: h100-80g, nodeLabel: "nvidia.com/gpu.product=NVIDIA-H100-80GB-HBM3" }]\n' +
        `kubernetes:\n  nodeAgent: { tokenFile: ${join(dataDir, 'agent-token')}, port: ${port} }\n`,
    );
    const config = new KubeConfig();
    config.loadFromString(standIn.kubeconfig());
    kubelet = new TestKubelet({
      api: clientApi(config),
      config,
      namespace: NS,
      labelSelector: labelSelector({ [LABELS.managed]: 'true' }),
      missingImages: new Set(),
      standIn,
      scheduleOnNodes: { gpuResource: 'nvidia.com/gpu' },
    });
    await kubelet.start();
  });

  afterAll(async () => {
    await server?.stop();
    await kubelet?.stop();
    for (const agent of agents) await agent.stop();
    await standIn?.close();
    await hub?.close();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it("waits in downloading with both nodes' bytes summed, labels both nodes, then makes a pod that requires them", async () => {
    hub.setBytesPerSecond(5_000_000);
    server = await startServe(
      [
        '--runtime',
        'kubernetes',
        '--kubeconfig',
        join(dataDir, 'kubeconfig'),
        '--config',
        join(dataDir, 'corral.yaml'),
      ],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );
    const created = await callApi(server, KEY, 'endpoint/create', modelEndpoint('kube-models', MODEL));
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    const workers = async () =>
      (await callApi(server as ServeProcess, KEY, `endpoint?id=${id}`)).body.endpoint.workers as {
        state: { state: string; message: string };
      }[];
    const podsOf = () => standIn.pods(NS).filter((p) => p.metadata?.labels?.[LABELS.endpoint] === id);

    const { files } = await hub.describe(MODEL);
    const bytes = files.reduce((sum, f) => sum + f.size, 0);
    const waiting = await vi.waitFor(
      async () => {
        const worker = (await workers()).find(
          (w) => w.state.state === 'downloading' && / of /.test(w.state.message),
        );
        expect(worker).toBeDefined();
        return worker?.state.message ?? '';
      },
      { timeout: 20_000, interval: 100 },
    );
    // Both nodes' copies: the total is twice the model's bytes (0.2 GB, where one node's would read 0.1 GB).
    expect(waiting).toContain(` of ${((2 * bytes) / 1e9).toFixed(1)} GB`);
    expect(((2 * bytes) / 1e9).toFixed(1)).not.toBe((bytes / 1e9).toFixed(1));
    expect(podsOf()).toEqual([]);
    hub.setBytesPerSecond(null);

    await vi.waitFor(() => expect(podsOf()).toHaveLength(1), { timeout: 30_000, interval: 100 });
    const label = modelNodeLabel(modelRepoDir(MODEL));
    for (const node of NODES) {
      const labels = standIn.nodes().find((n) => n.metadata?.name === node.name)?.metadata?.labels;
      expect(labels?.[label]).toBe('true');
      expect(existsSync(join(dataDir, node.name, modelRepoDir(MODEL), 'refs', 'main'))).toBe(true);
    }
    const pod = podsOf()[0];
    expect(pod?.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution).toEqual({
      nodeSelectorTerms: [{ matchExpressions: [{ key: label, operator: 'Exists' }] }],
    });
    expect(pod?.spec?.volumes).toContainEqual({
      name: 'volume-0',
      hostPath: { path: `/var/lib/corral/models/hub/${modelRepoDir(MODEL)}`, type: 'Directory' },
    });
  });

  it("keeps within the nodes' disk budgets the model an endpoint names, as the store says (it is the older one)", async () => {
    const running = server as ServeProcess;
    const other = await callApi(running, KEY, 'endpoint/create', modelEndpoint('kube-other', OTHER));
    expect(other.status, other.text).toBe(200);
    const labelOf = (name: string, node: string) =>
      standIn.nodes().find((n) => n.metadata?.name === node)?.metadata?.labels?.[
        modelNodeLabel(modelRepoDir(name))
      ];
    await vi.waitFor(() => expect(NODES.map((n) => labelOf(OTHER, n.name))).toEqual(['true', 'true']), {
      timeout: 30_000,
      interval: 100,
    });
    // Both nodes are over their budget (160 MB of 150), and the only model to evict is the one the first endpoint
    // names: Corral sent the store's named models with the fetch, so it stays, on disk and labelled.
    for (const node of NODES) {
      expect(existsSync(join(dataDir, node.name, modelRepoDir(MODEL), 'refs', 'main'))).toBe(true);
      expect(labelOf(MODEL, node.name)).toBe('true');
    }
    await callApi(running, KEY, 'endpoint/delete', { id: other.body.id });
  });

  it.runIf(chromiumAvailable())(
    "shows each node's copy in the dashboard's Models page, a Machine column",
    async () => {
      const at = await openSuiteBrowser();
      try {
        await signIn(at.page, (server as ServeProcess).apiUrl, KEY);
        await at.page.getByRole('link', { name: 'Models', exact: true }).click();
        await at.page.getByTestId('models-table').waitFor();
        await expect(at.page.getByRole('columnheader', { name: 'Machine' }).count()).resolves.toBe(1);
        const machines = await at.page
          .locator(`tr[data-model="${MODEL}"] [data-testid="model-machine"]`)
          .allTextContents();
        expect(machines.sort()).toEqual(NODES.map((n) => n.name));
      } finally {
        await at.browser.close();
      }
    },
  );

  it('lists the model on each node with its endpoint, and removes it from every node once no endpoint names it', async () => {
    const running = server as ServeProcess;
    const listing = await callApi(running, KEY, 'models');
    expect(listing.status, listing.text).toBe(200);
    const onNodes = (
      listing.body.models as { name: string; machine: string | null; endpoints: unknown[] }[]
    ).filter((m) => m.name === MODEL && m.machine !== null);
    expect(onNodes.map((m) => m.machine).sort()).toEqual(NODES.map((n) => n.name));
    expect(onNodes.every((m) => m.endpoints.length === 1)).toBe(true);
    const cli = spawnSync(process.execPath, [CORRAL_BIN, 'models', 'list', '--api-url', running.apiUrl], {
      env: { ...process.env, CORRAL_API_KEY: KEY },
      encoding: 'utf8',
    });
    expect(cli.stdout).toMatch(/^MACHINE +MODEL/);
    for (const node of NODES) expect(cli.stdout).toMatch(new RegExp(`^${node.name} +${MODEL} +main`, 'm'));

    const remove = () =>
      fetch(`${running.apiUrl}/gpu-instance/openapi/v1/models/${MODEL}`, {
        method: 'DELETE',
        headers: { authorization: `Bearer ${KEY}` },
      });
    const named = await remove();
    expect(named.status).toBe(409);
    expect(((await named.json()) as { reason: string }).reason).toBe('MODEL_IN_USE');
    const endpoints = (await callApi(running, KEY, 'endpoints')).body.endpoints as { id: string }[];
    for (const { id } of endpoints) await callApi(running, KEY, 'endpoint/delete', { id });
    expect((await remove()).status).toBe(204);
    const label = modelNodeLabel(modelRepoDir(MODEL));
    for (const node of NODES) {
      expect(existsSync(join(dataDir, node.name, modelRepoDir(MODEL)))).toBe(false);
      expect(
        standIn.nodes().find((n) => n.metadata?.name === node.name)?.metadata?.labels?.[label],
      ).toBeUndefined();
    }
    const after = await callApi(running, KEY, 'models');
    expect((after.body.models as { name: string }[]).filter((m) => m.name === MODEL)).toEqual([]);
  });

  it("pulls a model no endpoint names into both nodes' caches, labelled, listed on each node", async () => {
    const running = server as ServeProcess;
    const pulled = await callApi(running, KEY, 'models', { name: PULLED });
    expect(pulled.status, pulled.text).toBe(202);
    const label = modelNodeLabel(modelRepoDir(PULLED));
    await vi.waitFor(
      () =>
        expect(
          NODES.map(
            (node) => standIn.nodes().find((n) => n.metadata?.name === node.name)?.metadata?.labels?.[label],
          ),
        ).toEqual(['true', 'true']),
      { timeout: 15_000, interval: 100 },
    );
    for (const node of NODES)
      expect(existsSync(join(dataDir, node.name, modelRepoDir(PULLED), 'refs', 'main'))).toBe(true);
    const listing = await callApi(running, KEY, 'models');
    const machines = (listing.body.models as { name: string; machine: string | null }[])
      .filter((m) => m.name === PULLED)
      .map((m) => m.machine);
    // On the nodes only: no worker mounts Corral's own cache here, so the pull made no copy there.
    expect(machines.sort()).toEqual(NODES.map((n) => n.name));
    expect(existsSync(join(dataDir, 'models', 'hub', modelRepoDir(PULLED)))).toBe(false);
  });

  it('fetches a model on a GPU node that joined after the model was ready when its next worker starts', async () => {
    const running = server as ServeProcess;
    // OTHER was fetched (and is still held, labelled) on gpu-a and gpu-b for the second case's endpoint.
    const late = { name: 'gpu-c', address: '127.0.0.3' };
    await addNode(late);
    const resolutionsBefore = hub.requests.filter(
      (r) => r.server === 'hub' && r.path.startsWith(`/api/models/${OTHER}/revision/`),
    ).length;
    const created = await callApi(running, KEY, 'endpoint/create', modelEndpoint('kube-late', OTHER));
    expect(created.status, created.text).toBe(200);
    const label = modelNodeLabel(modelRepoDir(OTHER));
    await vi.waitFor(
      () =>
        expect(
          [...NODES, late].map(
            (node) => standIn.nodes().find((n) => n.metadata?.name === node.name)?.metadata?.labels?.[label],
          ),
        ).toEqual(['true', 'true', 'true']),
      { timeout: 15_000, interval: 100 },
    );
    expect(existsSync(join(dataDir, late.name, modelRepoDir(OTHER), 'refs', 'main'))).toBe(true);
    // gpu-a and gpu-b hold it: only gpu-c's agent was asked. Two resolutions of the model on the hub: Corral's check
    // at the endpoint's create, and gpu-c's fetch (asking every node made four).
    expect(
      hub.requests.filter((r) => r.server === 'hub' && r.path.startsWith(`/api/models/${OTHER}/revision/`))
        .length,
    ).toBe(resolutionsBefore + 2);
  });

  it("fetches a model again when every labelled node's cache lost it, rather than start a worker where it is not", async () => {
    const running = server as ServeProcess;
    const label = modelNodeLabel(modelRepoDir(OTHER));
    const nodes = [...NODES.map((n) => n.name), 'gpu-c'];
    // The agents restarted on emptied disks: the nodes keep their labels.
    for (const node of nodes)
      rmSync(join(dataDir, node, modelRepoDir(OTHER)), { recursive: true, force: true });
    // The last confirmation of OTHER on the nodes (the previous case's worker) stands 2 s.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const sent = hub.cdnBytesSent();
    const created = await callApi(running, KEY, 'endpoint/create', modelEndpoint('kube-lost', OTHER));
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    const podsOf = () => standIn.pods(NS).filter((p) => p.metadata?.labels?.[LABELS.endpoint] === id);
    await vi.waitFor(() => expect(podsOf()).toHaveLength(1), { timeout: 30_000, interval: 100 });
    for (const node of nodes) {
      expect(existsSync(join(dataDir, node, modelRepoDir(OTHER), 'refs', 'main'))).toBe(true);
      expect(standIn.nodes().find((n) => n.metadata?.name === node)?.metadata?.labels?.[label]).toBe('true');
    }
    // Fetched again on the three nodes: 3 copies of its 60 MB.
    expect(hub.cdnBytesSent() - sent).toBeGreaterThanOrEqual(3 * 60_000_000);
    const gone = serveLogLines(running).filter(
      (line) => line.msg === "model gone from a GPU node's cache; its label removed" && line.model === OTHER,
    );
    expect(gone.map((line) => line.node).sort()).toEqual(nodes.sort());
    // One worker was refused its pod, saying why; the one after it waited for the fetch and runs.
    const refused = serveLogLines(running).filter(
      (line) => line.endpointId === id && /no longer in any GPU node's cache/.test(String(line.reason)),
    );
    expect(refused).toHaveLength(1);
  });
});
