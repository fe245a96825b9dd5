/**
 * Opt-in (CORRAL_TEST_KUBE_CLUSTER, a cluster scripts/kube-cluster.sh started): Corral deployed onto a real
 * Kubernetes cluster by deploy/kubernetes, as docs/kubernetes.md tells an operator, then used as a user would through
 * its Services: an http endpoint woken through the gateway on a pod the real scheduler placed; a queue endpoint whose
 * worker pod takes jobs from the corral-workers Service by cluster DNS; no secret value in any pod's spec and an
 * image only on the nodes running; an endpoint's image pulled onto the nodes from a registry at its create, and one
 * the registry lacks failing the endpoint at once; a model fetched into every GPU node's cache by the node agents
 * while its worker waits holding no GPU, the worker then reading it on a node labelled as holding it; an idle pod frozen by the node agent, thawed by a request, still holding its GPU,
 * then deleted when its frozen time ends; the leading replica killed (kill -9) mid-traffic with no job lost and no
 * failed request beyond those in flight on it; that thaw against the Docker runtime's thaw of the same worker on this
 * machine (a `corral serve --runtime docker` beside the cluster); on two nodes, one endpoint's workers spread over the
 * nodes and other endpoints' packed beside them, and a `kubectl drain` of the node holding the workers moves them
 * and loses no job. The figures are printed for docs/kubernetes.md.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest';
import { modelNodeLabel } from '../../src/runtime/kubernetes/pod-spec.js';
import { PREPULL_LABEL } from '../../src/runtime/kubernetes/prepull-pods.js';
import { callGateway } from '../support/gateway-call.js';
import { type HubStandIn, startHubStandIn } from '../support/hub-stand-in.js';
import { callApi, startServe } from '../support/process.js';
import { httpCall, REPO, RealCluster, realClusterDir, runLong } from '../support/real-cluster.js';
import { RUNPOD_IMAGE, runpodImagePresent } from '../support/runpod-image.js';
import { ensureTestImage, removeInstallationResources } from '../support/test-image.js';

const { dir, skip } = realClusterDir();
const DOMAIN = 'run.example.com';
const POSTGRES_ADDRESS = '10.250.0.10';
const POD_NETWORK = '10.244.0.0/16';
const WORKERS = 'corral-workers';
/** Between one client's calls in the traffic: 4 clients, about 10 jobs and 10 requests a second in all. */
const PAUSE_MS = 150;
/** The Docker baseline's key, and its thaws (each side frozen and thawed this many times, alternating). */
const THAW_KEY = 'real-cluster-docker-baseline-key-0123';
const THAW_ROUNDS = 5;
/**
 * A model the hub stand-in serves to the node agents (on the cluster's bridge, which pods and nodes reach), named
 * for this run: the nodes' caches are this machine's directory, which outlives a run.
 */
const MODEL = `corral-test/cluster-llm-${Date.now().toString(36)}`;
/** Where this machine's nodes keep their model caches (deploy/kubernetes/node-agent.yaml's hostPath). */
const NODE_MODEL_CACHE = '/var/lib/corral/models/hub';
const MB = 1_000_000;
/** The cluster's registry (scripts/kube-cluster.sh), which the nodes' containerd pulls from. */
const REGISTRY = `127.0.0.1:${process.env.REGISTRY_PORT ?? '5050'}`;

describe.skipIf(!dir)(`Corral on a real cluster by its manifests${skip ? ` (skipped: ${skip})` : ''}`, () => {
  const cluster = new RealCluster(dir ?? '');
  const nodeCount = dir ? cluster.nodes().length : 0;
  let api: string;
  let gateway: string;
  let workerImage: string;
  let runpodWorker: { image: string; command?: string };
  let hub: HubStandIn;

  const call = async (path: string, body?: unknown) => {
    const answer = await httpCall(`${api}/gpu-instance/openapi/v1/${path}`, {
      key: cluster.operatorKey,
      body,
    });
    return {
      status: answer.status,
      body: answer.body ? JSON.parse(answer.body) : undefined,
      text: answer.body,
    };
  };
  const viaGateway = (app: string, path: string) =>
    httpCall(`${gateway}${path}`, { host: `${app}.${DOMAIN}`, key: cluster.operatorKey });
  const jobs = (endpoint: string, path: string, body?: unknown) =>
    httpCall(`${gateway}/v2/${endpoint}/${path}`, {
      key: cluster.operatorKey,
      body,
      method: body ? 'POST' : 'GET',
    });
  const podsOf = (endpointId: string): any[] =>
    cluster.json(['-n', WORKERS, 'get', 'pods', '-l', `corral.dev/endpoint=${endpointId}`]).items;
  /** The images a node's containerd holds (the kubelet's namespace). */
  const nodeImages = (node: string) =>
    execFileSync('ctr', ['-a', `${dir}/${node}/containerd.sock`, '-n', 'k8s.io', 'images', 'ls', '-q'], {
      encoding: 'utf8',
    }).split('\n');
  const workersOf = async (id: string) =>
    ((await call(`endpoint?id=${id}`)).body.endpoint.workers ?? []) as {
      id: string;
      state: { state: string; message: string };
    }[];
  /** Endpoints a test made, deleted after it whatever its outcome (a leftover would hold the cluster's GPUs). */
  const made: string[] = [];
  const create = async (endpoint: Record<string, unknown>) => {
    const created = await call('endpoint/create', { endpoint });
    expect(created.status, created.text).toBe(200);
    made.push(created.body.id);
    return created.body.id as string;
  };
  /** The jobs of `ids` not COMPLETED yet, with their status (asked 20 at a time, not all at once). */
  const unfinished = async (endpoint: string, ids: string[]) => {
    const left: string[] = [];
    for (let at = 0; at < ids.length; at += 20) {
      const answers = await Promise.all(ids.slice(at, at + 20).map((id) => jobs(endpoint, `status/${id}`)));
      for (const [i, answer] of answers.entries()) {
        const body = answer.status === 200 ? JSON.parse(answer.body) : undefined;
        const status = body ? body.status : `HTTP ${answer.status}`;
        // A job that ended otherwise says why (its error), for the run's record.
        if (status !== 'COMPLETED')
          left.push(`${ids[at + i]} ${status}${body?.error ? ` (${JSON.stringify(body.error)})` : ''}`);
      }
    }
    return left;
  };
  /** A queue endpoint of the RunPod protocol worker, taking `concurrency` jobs at once. */
  const createQueue = (name: string, minNum: number, concurrency: number) =>
    create({
      name,
      type: 'queue',
      image: runpodWorker,
      workerConfig: { minNum, maxNum: 1, maxConcurrent: concurrency, freeTimeout: 300, gpuNum: 1 },
      envs: [
        { key: 'RUNPOD_PING_INTERVAL', value: '1000' },
        // The test image's worker reads the first, the runpod-python image's handler the second.
        { key: 'CONCURRENCY', value: String(concurrency) },
        { key: 'CORRAL_TEST_CONCURRENCY', value: String(concurrency) },
      ],
    });
  const remove = async (id: string) => {
    await call('endpoint/delete', { id });
    await vi.waitFor(() => expect(podsOf(id)).toEqual([]), { timeout: 60_000, interval: 500 });
  };

  beforeAll(async () => {
    // Images only on the nodes (no registry serves them), with tags other than latest: IfNotPresent runs them.
    const corralImage = 'corral:dev';
    await runLong(`${REPO}/scripts/build-corral-image.sh`, [corralImage]);
    execFileSync('docker', ['tag', await ensureTestImage(), 'corral-test-worker:kube']);
    workerImage = 'corral-test-worker:kube';
    const images = [corralImage, workerImage];
    // The unmodified runpod-python worker where it was built here (scripts/build-runpod-image.sh), else the test
    // image's RunPod protocol worker.
    if (runpodImagePresent()) {
      execFileSync('docker', ['tag', RUNPOD_IMAGE, 'corral-runpod-worker:kube']);
      runpodWorker = { image: 'corral-runpod-worker:kube' };
      images.push(runpodWorker.image);
    } else runpodWorker = { image: workerImage, command: '/runpod-worker.mjs' };
    await cluster.loadImages(images);
    // A run stopped mid-drain leaves its node cordoned.
    for (const node of cluster.nodes()) cluster.kubectl(['uncordon', node]);
    // The hub's stand-in where Corral's pods (the create's check) and the node agents (the download) reach it.
    hub = await startHubStandIn({
      models: [{ name: MODEL, weightBytes: 64 * MB, shards: 2 }],
      bytesPerSecond: 16 * MB,
      host: POSTGRES_ADDRESS,
    });
    await cluster.deploy({
      image: corralImage,
      postgresAddress: POSTGRES_ADDRESS,
      podNetwork: POD_NETWORK,
      configYaml: `models:\n  hubUrl: ${hub.url}\n`,
      nodeAgentEnv: { HF_ENDPOINT: hub.url },
    });
    api = cluster.serviceUrl('corral-api');
    gateway = cluster.serviceUrl('corral-gateway');
    await vi.waitFor(async () => expect((await call('products')).status).toBe(200), {
      timeout: 60_000,
      interval: 1_000,
    });
  }, 1_800_000);

  afterEach(async () => {
    for (const id of made.splice(0)) await remove(id);
  }, 120_000);

  afterAll(async () => {
    await hub?.close();
    rmSync(join(NODE_MODEL_CACHE, `models--${MODEL.replace('/', '--')}`), { recursive: true, force: true });
    await cluster.destroy();
  }, 300_000);

  it('serves an http endpoint through the gateway Service, woken on a pod the scheduler placed', async () => {
    const id = await create({
      appName: 'hello',
      image: { image: workerImage },
      ports: [{ port: 8000 }],
      workerConfig: { minNum: 0, maxNum: 1, maxConcurrent: 4, freeTimeout: 300, gpuNum: 1 },
    });
    const first = await viaGateway('hello', '/work?ms=1');
    expect(first.status, first.body).toBe(200);
    const [pod] = podsOf(id);
    expect(pod.spec.nodeName).toMatch(/^node-\d$/);
    expect(pod.spec.containers[0].imagePullPolicy).toBe('IfNotPresent');
    expect(pod.spec.containers[0].resources.limits['nvidia.com/gpu']).toBe('1');
    console.log(`[real cluster] http cold start: ${first.headers['server-timing']}`);
    // No secret value in the pod: the worker's env and job token are in a Secret the pod references.
    const spec = cluster.kubectl(['-n', WORKERS, 'get', 'pod', pod.metadata.name, '-o', 'yaml']);
    expect(spec).not.toContain(cluster.operatorKey);
    expect(spec).not.toMatch(/RUNPOD_AI_API_KEY\s*\n\s*value:/);
  }, 180_000);

  it('runs a queue endpoint: its worker pod takes jobs from the corral-workers Service by cluster DNS', async () => {
    const id = await createQueue('queue', 0, 2);
    const run = await jobs(id, 'run', { input: { n: 1, sleepMs: 10 } });
    expect(run.status, run.body).toBe(200);
    const jobId = JSON.parse(run.body).id;
    await vi.waitFor(
      async () => expect(JSON.parse((await jobs(id, `status/${jobId}`)).body).status).toBe('COMPLETED'),
      { timeout: 120_000, interval: 500 },
    );
    const [pod] = podsOf(id);
    // Every RUNPOD_* value comes from the worker's Secret (a job token among them), none is in the pod's spec.
    const env: { name: string; value?: string; valueFrom?: any }[] = pod.spec.containers[0].env ?? [];
    const fromSecret = env.filter((e) => e.valueFrom?.secretKeyRef).map((e) => e.name);
    expect(fromSecret).toEqual(expect.arrayContaining(['RUNPOD_WEBHOOK_GET_JOB', 'RUNPOD_AI_API_KEY']));
    expect(env.filter((e) => e.name.startsWith('RUNPOD_') && e.value !== undefined)).toEqual([]);
    const secretName = env.find((e) => e.name === 'RUNPOD_WEBHOOK_GET_JOB')?.valueFrom.secretKeyRef.name;
    const stored = cluster.json(['-n', WORKERS, 'get', 'secret', secretName]);
    const plain = (key: string) => Buffer.from(String(stored.data[key]), 'base64').toString();
    // The job URL names the corral-workers Service, resolved by the cluster's DNS in the worker's pod.
    expect(plain('RUNPOD_WEBHOOK_GET_JOB')).toMatch(/^http:\/\/corral-workers\.corral\.svc:8082\//);
    const spec = cluster.kubectl(['-n', WORKERS, 'get', 'pod', pod.metadata.name, '-o', 'yaml']);
    expect(plain('RUNPOD_AI_API_KEY').length).toBeGreaterThanOrEqual(16);
    expect(spec).not.toContain(plain('RUNPOD_AI_API_KEY'));
  }, 240_000);

  it("pulls an endpoint's image onto the nodes at its create, so that its first request waits for no pull; an image the registry lacks fails it at once", async () => {
    // A tag no node has: pushed to the cluster's registry (scripts/kube-cluster.sh), pulled by the nodes' containerd.
    // An image of its own (the test image and a label), so that no other image gains this registry's digest: Corral
    // would then refuse that one as a loopback registry's (IMAGE_ACCESS_DENIED) on the Docker runtime.
    const tag = Date.now().toString(36);
    const image = `${REGISTRY}/corral-prepull:${tag}`;
    execFileSync('docker', ['build', '-q', '-t', image, '-'], {
      input: `FROM ${workerImage}\nLABEL dev.corral.test.prepull=${tag}\n`,
    });
    await runLong('docker', ['push', image]);
    execFileSync('docker', ['rmi', image]);
    const onNodes = () => cluster.nodes().filter((node) => nodeImages(node).includes(image));
    expect(onNodes()).toEqual([]);
    const id = await create({
      appName: 'prepulled',
      image: { image },
      ports: [{ port: 8000 }],
      workerConfig: { minNum: 0, maxNum: 1, maxConcurrent: 2, freeTimeout: 300, gpuNum: 1 },
    });
    const created = performance.now();
    await vi.waitFor(() => expect(onNodes()).toEqual(cluster.nodes()), { timeout: 180_000, interval: 500 });
    const pulledMs = performance.now() - created;
    // The pre-pull ends when every node's pod has said so and is deleted; no worker was started for it meanwhile.
    await vi.waitFor(
      () => expect(cluster.json(['-n', WORKERS, 'get', 'pods', '-l', PREPULL_LABEL]).items).toEqual([]),
      { timeout: 60_000, interval: 500 },
    );
    expect(await workersOf(id)).toEqual([]);
    const first = await viaGateway('prepulled', '/work?ms=1');
    expect(first.status, first.body).toBe(200);
    // The image is on the node the worker runs on: its cold start waited for no pull.
    expect(Number(/pull;dur=([\d.]+)/.exec(String(first.headers['server-timing']))?.[1])).toBeLessThan(500);
    console.log(
      `[real cluster] image on ${cluster.nodes().length} node(s) ${Math.round(pulledMs)} ms after the create; first request: ${first.headers['server-timing']}`,
    );

    const missing = `${REGISTRY}/corral-prepull-missing:${Date.now().toString(36)}`;
    const failing = await create({
      appName: 'unpullable',
      image: { image: missing },
      ports: [{ port: 8000 }],
      workerConfig: { minNum: 0, maxNum: 1, maxConcurrent: 2, freeTimeout: 300, gpuNum: 1 },
    });
    await vi.waitFor(
      async () => {
        const answer = await viaGateway('unpullable', '/work?ms=1');
        expect(answer.status, answer.body).toBe(503);
        expect(JSON.parse(answer.body)).toMatchObject({
          reason: 'ENDPOINT_FAILED',
          metadata: { endpointError: 'IMAGE_PULL_FAILED' },
        });
      },
      { timeout: 120_000, interval: 1_000 },
    );
    // A request sent before the pre-pull failed may have started a worker (starts do not wait for the pre-pull on
    // Kubernetes), whose pod fails to pull as well: nothing of it is left.
    await vi.waitFor(() => expect(podsOf(failing)).toEqual([]), { timeout: 60_000, interval: 1_000 });
  }, 600_000);

  it("fills every GPU node's model cache through its agent while the worker waits holding no GPU, then runs it on a node that holds the model", async () => {
    /** An endpoint of one worker that names MODEL. */
    const createModelled = (appName: string) =>
      create({
        appName,
        image: { image: workerImage },
        ports: [{ port: 8000 }],
        models: [{ name: MODEL }],
        workerConfig: { minNum: 1, maxNum: 1, maxConcurrent: 2, freeTimeout: 300, gpuNum: 1 },
      });
    const id = await createModelled('modelled');
    const waits: string[] = [];
    await vi.waitFor(
      async () => {
        const [worker] = await workersOf(id);
        if (worker?.state.state === 'downloading') waits.push(worker.state.message);
        expect(worker?.state.message).toMatch(
          new RegExp(`^model ${MODEL}: [\\d.]+ of [\\d.]+ GB, \\d+ MB/s`),
        );
      },
      { timeout: 60_000, interval: 200 },
    );
    // Downloading holds no GPU of the cluster's.
    const { products } = (await call('products')).body;
    expect(products[0].gpusFree).toBe(products[0].gpusTotal);
    await vi.waitFor(async () => expect((await workersOf(id))[0]?.state.state).toBe('running'), {
      timeout: 180_000,
      interval: 500,
    });
    const { commit, files } = await hub.describe(MODEL);
    const lfs = files.filter((file) => file.sha256 !== null);
    const lfsBytes = lfs.reduce((sum, file) => sum + file.size, 0);
    // Every GPU node fetched it once, and says so by its label; the pod could only go to such a node.
    const repoDir = `models--${MODEL.replace('/', '--')}`;
    const label = modelNodeLabel(repoDir);
    const labelled = cluster.json(['get', 'nodes', '-l', label]).items.map((n: any) => n.metadata.name);
    expect(labelled.sort()).toEqual(cluster.nodes().sort());
    // GET models lists the model in every GPU node's cache, by the node's name, with the endpoint naming it.
    const listed = (await call('models')).body.models as {
      name: string;
      machine: string | null;
      endpoints: { endpointId: string }[];
    }[];
    const onNodes = listed.filter((m) => m.name === MODEL && m.machine !== null);
    expect(onNodes.map((m) => m.machine).sort()).toEqual(cluster.nodes().sort());
    expect(onNodes.every((m) => m.endpoints.some((e) => e.endpointId === id))).toBe(true);
    // This machine's nodes share one host directory (one filesystem under every kubelet), which their agents fill
    // one at a time: the model's bytes came once, or at most once per node.
    const sent = hub.cdnBytesSent();
    expect(sent).toBeGreaterThanOrEqual(lfsBytes);
    expect(sent).toBeLessThanOrEqual(lfsBytes * cluster.nodes().length);
    const [pod] = podsOf(id);
    expect(
      JSON.stringify(pod.spec.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution),
    ).toContain(label);
    // The worker reads the shard at HF_HUB_CACHE, byte for byte the hub's.
    const shard = lfs[0];
    const readsShard = async (appName: string) => {
      const read = await viaGateway(
        appName,
        `/sha256?path=${encodeURIComponent(`/runpod-volume/huggingface-cache/hub/${repoDir}/snapshots/${commit}/${shard?.path}`)}`,
      );
      expect(read.status, read.body).toBe(200);
      expect(JSON.parse(read.body)).toMatchObject({ size: shard?.size, sha256: shard?.sha256 });
    };
    await readsShard('modelled');
    console.log(
      `[real cluster] model of ${lfsBytes} bytes on ${labelled.length} node(s), ${sent} bytes from the CDN; waits seen: ${JSON.stringify([waits[0], waits.at(-1)])}`,
    );
    // A second endpoint naming the model starts with nothing more from the hub's CDN.
    const again = await createModelled('modelled-again');
    await vi.waitFor(async () => expect((await workersOf(again))[0]?.state.state).toBe('running'), {
      timeout: 120_000,
      interval: 500,
    });
    expect(hub.cdnBytesSent()).toBe(sent);

    // The nodes' cache emptied while they keep their labels (an agent restarted on an emptied disk): the next worker
    // is not sent where its files are not; the model is fetched again, and the worker reads it.
    await remove(again);
    rmSync(join(NODE_MODEL_CACHE, repoDir), { recursive: true, force: true });
    // The check of the nodes' caches made for the last pod stands 2 s for the pods made after it.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const lost = await createModelled('modelled-lost');
    await vi.waitFor(
      async () => expect((await workersOf(lost)).map((w) => w.state.state)).toContain('running'),
      { timeout: 180_000, interval: 500 },
    );
    // Its first worker was refused a pod, saying why; the one after it waited for the fetch.
    const refused = (await workersOf(lost)).filter((w) => w.state.state === 'failed');
    expect(refused.map((w) => w.state.message)).toEqual([
      expect.stringContaining(`model ${MODEL} is no longer in any GPU node's cache`),
    ]);
    expect(hub.cdnBytesSent()).toBeGreaterThanOrEqual(sent + lfsBytes);
    expect(cluster.json(['get', 'nodes', '-l', label]).items).toHaveLength(cluster.nodes().length);
    await readsShard('modelled-lost');
    console.log(
      `[real cluster] the nodes' cache emptied under their labels: fetched again (${hub.cdnBytesSent() - sent} bytes from the CDN), the worker read the shard`,
    );
  }, 600_000);

  it('freezes an idle pod through the node agent, thaws it on a request with its GPU kept, deletes it when the frozen time ends', async () => {
    const id = await create({
      appName: 'frozen',
      image: { image: workerImage },
      ports: [{ port: 8000 }],
      workerConfig: { minNum: 0, maxNum: 1, maxConcurrent: 2, freeTimeout: 2, gpuNum: 1, keepFrozen: 40 },
      policy: { type: 'queue', value: 1 },
    });
    const cold = await viaGateway('frozen', '/work?ms=1');
    expect(cold.status, cold.body).toBe(200);
    const [pod] = podsOf(id);
    await vi.waitFor(async () => expect((await workersOf(id))[0]?.state.state).toBe('frozen'), {
      timeout: 60_000,
      interval: 500,
    });
    // Still the same pod, still holding its GPU in the cluster's inventory.
    expect(podsOf(id).map((p) => p.metadata.uid)).toEqual([pod.metadata.uid]);
    const products = (await call('products')).body;
    console.log(`[real cluster] products while frozen: ${JSON.stringify(products)}`);
    const woken = await viaGateway('frozen', '/work?ms=1');
    expect(woken.status, woken.body).toBe(200);
    expect(String(woken.headers['server-timing'])).toMatch(/thaw;dur=[\d.]+/);
    console.log(
      `[real cluster] cold ${cold.headers['server-timing']}; thaw ${woken.headers['server-timing']}`,
    );
    expect(podsOf(id).map((p) => p.metadata.uid)).toEqual([pod.metadata.uid]);
    // Idle again: frozen, then past keepFrozen the pod is deleted.
    await vi.waitFor(async () => expect((await workersOf(id))[0]?.state.state).toBe('frozen'), {
      timeout: 60_000,
      interval: 500,
    });
    await vi.waitFor(() => expect(podsOf(id)).toEqual([]), { timeout: 120_000, interval: 1_000 });
  }, 300_000);

  it('thaws a frozen pod within 1.5x of the Docker runtime thawing the same worker on this machine', async () => {
    // The baseline: corral serve with the Docker runtime on this machine's Docker, the same image and idle tier.
    const dataDir = mkdtempSync(join(tmpdir(), 'corral-real-cluster-docker-'));
    writeFileSync(join(dataDir, 'corral.yaml'), 'controller: { reconcileIntervalMs: 200 }\n');
    const local = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:1', '--config', join(dataDir, 'corral.yaml')],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: THAW_KEY },
    );
    try {
      const frozenEndpoint = {
        image: { image: workerImage },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 1, maxConcurrent: 2, freeTimeout: 2, gpuNum: 1, keepFrozen: 600 },
        policy: { type: 'queue', value: 1 },
      };
      await create({ appName: 'thawed', ...frozenEndpoint });
      const onDocker = await callApi(local, THAW_KEY, 'endpoint/create', {
        endpoint: { appName: 'thawed', ...frozenEndpoint, image: { image: await ensureTestImage() } },
      });
      expect(onDocker.status, onDocker.text).toBe(200);
      const sides = {
        cluster: {
          call: () => viaGateway('thawed', '/work?ms=1'),
          state: async () => (await workersOf(made.at(-1) ?? ''))[0]?.state.state,
        },
        docker: {
          call: () => callGateway(local, THAW_KEY, 'thawed', '/work?ms=1'),
          state: async () =>
            (await callApi(local, THAW_KEY, `endpoint?id=${onDocker.body.id}`)).body.endpoint.workers?.[0]
              ?.state.state,
        },
      };
      for (const side of Object.values(sides)) expect((await side.call()).status).toBe(200);
      const thaws: Record<keyof typeof sides, { span: number; answer: number }[]> = {
        cluster: [],
        docker: [],
      };
      for (let round = 0; round < THAW_ROUNDS; round += 1) {
        for (const side of Object.values(sides))
          await vi.waitFor(async () => expect(await side.state()).toBe('frozen'), {
            timeout: 60_000,
            interval: 200,
          });
        // Alternating which side thaws first, so that neither always finds the machine quieter.
        const order = round % 2 === 0 ? (['cluster', 'docker'] as const) : (['docker', 'cluster'] as const);
        for (const name of order) {
          const started = performance.now();
          const answer = await sides[name].call();
          const took = performance.now() - started;
          expect(answer.status, answer.body).toBe(200);
          const span = /thaw;dur=([\d.]+)/.exec(String(answer.headers['server-timing']))?.[1];
          expect(span, `${name}: ${answer.headers['server-timing']}`).toBeDefined();
          thaws[name].push({ span: Number(span), answer: took });
        }
      }
      const median = (values: number[]) =>
        [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)] ?? NaN;
      const figures = Object.fromEntries(
        Object.entries(thaws).map(([name, list]) => [
          name,
          { span: median(list.map((t) => t.span)), answer: median(list.map((t) => t.answer)), all: list },
        ]),
      );
      const ratio = (figures.cluster?.span ?? NaN) / (figures.docker?.span ?? NaN);
      console.log(
        `[real cluster] thaw, ${THAW_ROUNDS} rounds (medians; load ${loadavg()
          .map((l) => l.toFixed(2))
          .join(' ')}): ${JSON.stringify(figures)}; cluster/docker thaw span ${ratio.toFixed(2)}`,
      );
      expect(ratio).toBeLessThanOrEqual(1.5);
    } finally {
      await local.stop();
      removeInstallationResources(local.installationId);
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 600_000);

  it.skipIf(nodeCount < 2)(
    "on two nodes, spreads an endpoint's workers over the nodes and packs other endpoints' beside them",
    async () => {
      const nodesOf = (id: string) =>
        podsOf(id)
          .map((p) => p.spec.nodeName as string | undefined)
          .filter((n) => n !== undefined);
      const placed = async (id: string, count: number) => {
        await vi.waitFor(() => expect(nodesOf(id)).toHaveLength(count), { timeout: 120_000, interval: 500 });
        return nodesOf(id);
      };
      const idle = { image: { image: workerImage }, ports: [{ port: 8000 }] };
      // Two workers of one endpoint: one per node, although either node has GPUs for both.
      const spread = await create({
        appName: 'spread',
        ...idle,
        workerConfig: { minNum: 2, maxNum: 2, maxConcurrent: 1, freeTimeout: 300, gpuNum: 1 },
      });
      const spreadNodes = await placed(spread, 2);
      console.log(`[real cluster] placement: one endpoint's two workers on ${spreadNodes.join(', ')}`);
      expect(new Set(spreadNodes).size).toBe(2);
      await remove(spread);
      made.splice(made.indexOf(spread), 1);
      // One worker each of two endpoints: the second beside the first, leaving the other node's GPUs whole.
      const first = await create({
        appName: 'pack-a',
        ...idle,
        workerConfig: { minNum: 1, maxNum: 1, maxConcurrent: 1, freeTimeout: 300, gpuNum: 1 },
      });
      const [firstNode] = await placed(first, 1);
      const second = await create({
        appName: 'pack-b',
        ...idle,
        workerConfig: { minNum: 1, maxNum: 1, maxConcurrent: 1, freeTimeout: 300, gpuNum: 1 },
      });
      const [secondNode] = await placed(second, 1);
      console.log(`[real cluster] placement: two endpoints' workers on ${firstNode} and ${secondNode}`);
      expect(secondNode).toBe(firstNode);
    },
    600_000,
  );

  it('loses no job and fails no request beyond those in flight when the leading replica is killed mid-traffic', async () => {
    const queue = await createQueue('steady', 1, 4);
    await create({
      appName: 'steady-http',
      image: { image: workerImage },
      ports: [{ port: 8000 }],
      workerConfig: { minNum: 1, maxNum: 1, maxConcurrent: 8, freeTimeout: 300, gpuNum: 1 },
    });
    await vi.waitFor(async () => expect((await viaGateway('steady-http', '/work?ms=1')).status).toBe(200), {
      timeout: 120_000,
      interval: 1_000,
    });
    const accepted: string[] = [];
    const failures: { at: number; ended: number; what: string }[] = [];
    let refused = 0;
    let stop = false;
    let killedAt = 0;
    const loop = async (
      send: () => Promise<{ status: number; body: string; error?: string }>,
      what: string,
    ) => {
      while (!stop) {
        const started = Date.now();
        const answer = await send();
        // A refused connection sent nothing: the client tries again, as any client behind a Service does.
        if (answer.error === 'ECONNREFUSED') {
          refused += 1;
          continue;
        }
        if (answer.status !== 200)
          failures.push({
            at: started,
            ended: Date.now(),
            what: `${what}: ${answer.status} ${answer.error ?? answer.body.slice(0, 120)}`,
          });
        else if (what === 'job') accepted.push(JSON.parse(answer.body).id);
        await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
      }
    };
    const loops = [
      loop(() => jobs(queue, 'run', { input: { n: 1, sleepMs: 50 } }), 'job'),
      loop(() => jobs(queue, 'run', { input: { n: 2, sleepMs: 50 } }), 'job'),
      loop(() => viaGateway('steady-http', '/work?ms=100'), 'http'),
      loop(() => viaGateway('steady-http', '/work?ms=100'), 'http'),
    ];
    await new Promise((resolve) => setTimeout(resolve, 5_000));
    const leader = (await cluster.replicas()).find((replica) => replica.leader);
    expect(leader, 'a leading replica').toBeDefined();
    killedAt = Date.now();
    const killed = cluster.killPodProcesses(leader?.uid ?? '');
    expect(killed.length).toBeGreaterThan(0);
    // Its processes (and their sockets) are gone only once the kernel has ended them: a call that started before
    // that could still reach the dying replica.
    const diedAt = await cluster.whenGone(killed);
    await new Promise((resolve) => setTimeout(resolve, 30_000));
    stop = true;
    await Promise.all(loops);
    // Only calls in flight on the leader while it died may fail.
    const afterKill = failures.filter((failure) => failure.at > diedAt || failure.ended < killedAt);
    console.log(
      `[real cluster] leader ${leader?.name} killed (gone ${diedAt - killedAt} ms after the signal): ${accepted.length} jobs accepted, ${failures.length} failed (${JSON.stringify(failures.map((f) => ({ ...f, at: f.at - killedAt, ended: f.ended - killedAt })))}, ms from the signal), ${refused} connections refused and retried`,
    );
    expect(afterKill).toEqual([]);
    await vi.waitFor(async () => expect(await unfinished(queue, accepted)).toEqual([]), {
      timeout: 180_000,
      interval: 2_000,
    });
  }, 600_000);

  it.skipIf(nodeCount < 2)(
    'on two nodes, a kubectl drain of the node holding the workers moves them and loses no job (needs scripts/kube-cluster.sh start 2)',
    async () => {
      const queue = await createQueue('drained', 1, 2);
      await vi.waitFor(() => expect(podsOf(queue)[0]?.status.phase).toBe('Running'), {
        timeout: 120_000,
        interval: 500,
      });
      const node = podsOf(queue)[0].spec.nodeName as string;
      const accepted: string[] = [];
      for (let i = 0; i < 20; i += 1) {
        const run = await jobs(queue, 'run', { input: { n: i, sleepMs: 500 } });
        expect(run.status, run.body).toBe(200);
        accepted.push(JSON.parse(run.body).id);
      }
      try {
        // Corral's own replicas may be on that node: their data directory is an emptyDir that holds nothing to keep (the
        // store is PostgreSQL), which drain deletes only when told (docs/kubernetes.md, "Draining a node").
        await cluster.kubectlLong([
          'drain',
          node,
          '--ignore-daemonsets',
          '--delete-emptydir-data',
          '--timeout=120s',
        ]);
        await vi.waitFor(
          () => {
            const pods = podsOf(queue).filter((p) => !p.metadata.deletionTimestamp);
            expect(pods.map((p) => p.spec.nodeName).filter((n) => n !== node).length).toBe(1);
          },
          { timeout: 120_000, interval: 1_000 },
        );
        await vi.waitFor(async () => expect(await unfinished(queue, accepted)).toEqual([]), {
          timeout: 180_000,
          interval: 2_000,
        });
      } finally {
        cluster.kubectl(['uncordon', node]);
      }
    },
    600_000,
  );
});
