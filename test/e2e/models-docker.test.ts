/**
 * Models on endpoints with `corral serve --runtime docker` (the built binary) and the hub stand-in
 * (test/support/hub-stand-in.ts) as `models.hubUrl` (issue 34's "Done when", docs/models.md): a worker waits in
 * `downloading`, holding no GPU, with its progress; the test image's worker then reads the model's files at the path
 * its HF_HUB_CACHE names (RunPod's /runpod-volume/huggingface-cache/hub), and cannot write there; another endpoint
 * naming the same model (at refs/pr/1, whose weights are main's) starts with no byte from the CDN, and
 * `huggingface_hub` itself (opt-in: test/support/hub-python.ts) loads both revisions offline beside that worker; a
 * `kill -9` of `corral serve` mid-download and a restart resume the download with a Range, and its worker starts; a
 * gated model one owner's worker has in the cache is refused at create to an owner whose token the hub refuses.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { WORKER_HUB_CACHE } from '../../src/domain/model-refs.js';
import { callGateway } from '../support/gateway-call.js';
import { hubPythonVersion, runHubPythonBeside } from '../support/hub-python.js';
import { type HubFileFacts, type HubStandIn, startHubStandIn } from '../support/hub-stand-in.js';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import {
  containersOf,
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  testWorkerEndpoint,
} from '../support/test-image.js';

const KEY = 'e2e-models-docker-operator-key-01';
const MODEL = 'corral-test/tiny-llm';
const KILLED = 'corral-test/killed-llm';
const GATED = 'corral-test/gated-llm';
const MB = 1024 * 1024;
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

interface WorkerView {
  id: string;
  state: { state: string; message: string };
}

describe.runIf(withDocker)('models on endpoints, with corral serve on Docker and a hub stand-in', () => {
  let hub: HubStandIn;
  let server: ServeProcess | undefined;
  let dataDir = '';
  let image = '';
  const ids: Record<string, string> = {};
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  const serve = async () => {
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:4', '--config', join(dataDir, 'corral.yaml')],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );
  };

  beforeAll(async () => {
    image = await ensureTestImage();
    hub = await startHubStandIn({
      models: [
        { name: MODEL, weightBytes: 48 * MB, shards: 2 },
        { name: KILLED, weightBytes: 96 * MB },
        { name: GATED, weightBytes: MB, access: { kind: 'gated', tokens: ['hf_granted'] } },
      ],
      // A token the hub knows that was not granted the gated model: 403 GatedRepo, not 401.
      tokens: ['hf_not_granted'],
      // Slow enough to see the download under way: about 4 s for the first model.
      bytesPerSecond: 12 * MB,
    });
    await hub.describe(MODEL);
    await hub.describe(KILLED);
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-models-docker-'));
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      `models:\n  hubUrl: ${hub.url}\ncontroller: { reconcileIntervalMs: 200 }\nquotas: { minGpus: unlimited, maxGpus: unlimited }\n`,
    );
    await serve();
  }, 120_000);

  afterAll(async () => {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    await hub?.close();
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  const api = (path: string, body?: unknown, owner?: string) =>
    callApi(server as ServeProcess, KEY, path, body, owner);
  const create = async (name: string, models: unknown[]) => {
    const created = await api('endpoint/create', {
      endpoint: { ...testWorkerEndpoint(image), name, appName: name, models },
    });
    expect(created.status, created.text).toBe(200);
    ids[name] = created.body.id;
    return created.body.id as string;
  };
  const workersOf = async (id: string, owner?: string): Promise<WorkerView[]> =>
    (await api(`endpoint?id=${id}`, undefined, owner)).body.endpoint.workers;
  const gpusHeld = async () =>
    ((await api('gpus')).body.gpus as { heldBy: unknown }[]).filter((gpu) => gpu.heldBy !== null).length;
  const running = (id: string, timeout = 60_000, owner?: string) =>
    vi.waitFor(async () => expect((await workersOf(id, owner))[0]?.state.state).toBe('running'), {
      timeout,
      interval: 200,
    });
  const workerCall = async (name: string, path: string) => {
    const answer = await callGateway(server as ServeProcess, KEY, name, path);
    return { status: answer.status, body: JSON.parse(answer.body) };
  };
  const lfsBytes = (files: HubFileFacts[]) =>
    files.reduce((sum, file) => sum + (file.sha256 === null ? 0 : file.size), 0);

  it('downloads the model before the worker holds a GPU; the worker reads it at HF_HUB_CACHE and cannot write there', async () => {
    const id = await create('reader-a', [{ name: MODEL }]);
    await vi.waitFor(
      async () => {
        const downloading = (await workersOf(id)).find((worker) => worker.state.state === 'downloading');
        expect(downloading?.state.message).toMatch(
          /^model corral-test\/tiny-llm: [\d.]+ of [\d.]+ GB, \d+ MB\/s, about \d+ s left$/,
        );
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(await gpusHeld()).toBe(0);
    await running(id);
    const { commit, files } = await hub.describe(MODEL);
    expect(hub.cdnBytesSent()).toBe(lfsBytes(files));

    const env = await workerCall('reader-a', '/env');
    expect(env.body).toMatchObject({ HF_HUB_CACHE: WORKER_HUB_CACHE, HF_HUB_OFFLINE: '1' });
    const snapshot = `${env.body.HF_HUB_CACHE}/models--corral-test--tiny-llm/snapshots/${commit}`;
    const shard = files.find((file) => file.sha256 !== null) as HubFileFacts;
    const read = await workerCall(
      'reader-a',
      `/sha256?path=${encodeURIComponent(`${snapshot}/${shard.path}`)}`,
    );
    expect(read.body).toMatchObject({ size: shard.size, sha256: shard.sha256 });
    // RunPod's path, named literally: the same files.
    const runpodPath = `/runpod-volume/huggingface-cache/hub/models--corral-test--tiny-llm/snapshots/${commit}/config.json`;
    const config = await workerCall('reader-a', `/sha256?path=${encodeURIComponent(runpodPath)}`);
    expect(config.status, JSON.stringify(config.body)).toBe(200);

    const write = await fetch(
      `${server?.gatewayUrl}/e/reader-a/write?path=${encodeURIComponent(`${snapshot}/config.json`)}&mode=644`,
      { method: 'POST', headers: { authorization: `Bearer ${KEY}` }, body: '{}' },
    );
    expect(write.status).toBe(500);
    expect(await write.text()).toMatch(/EROFS|read-only/i);
  }, 120_000);

  it('starts another endpoint naming the model at refs/pr/1 with no byte from the CDN', async () => {
    const sent = hub.cdnBytesSent();
    const id = await create('reader-b', [{ name: MODEL, revision: 'refs/pr/1' }]);
    await running(id);
    expect(hub.cdnBytesSent()).toBe(sent);
  }, 90_000);

  it.runIf(hubPythonVersion)(
    `huggingface_hub ${hubPythonVersion} loads main and refs/pr/1 offline beside the worker, from its mount`,
    async () => {
      const [container] = containersOf(server?.installationId ?? '', ids['reader-b']);
      expect(container).toBeDefined();
      const run = await runHubPythonBeside(container as string, MODEL, 'config.json', ['main', 'refs/pr/1']);
      expect(run.offline).toBe('1');
      for (const revision of ['main', 'refs/pr/1']) {
        const { commit, files } = await hub.describe(MODEL, revision);
        const seen = run.revisions[revision];
        expect(seen?.snapshot).toBe(`${WORKER_HUB_CACHE}/models--corral-test--tiny-llm/snapshots/${commit}`);
        expect(seen?.download).toBe(`${seen?.snapshot}/config.json`);
        expect(Object.keys(seen?.files ?? {}).sort()).toEqual(files.map((file) => file.path).sort());
        for (const file of files) {
          const got = seen?.files[file.path];
          expect(got?.size, file.path).toBe(file.size);
          if (file.sha256 === null) expect(got?.gitSha1, file.path).toBe(file.blobId);
          else expect(got?.sha256, file.path).toBe(file.sha256);
        }
      }
    },
    120_000,
  );

  it('resumes a download with a Range after a kill -9 of corral serve and a restart, and starts the worker', async () => {
    const held = await gpusHeld();
    const { files } = await hub.describe(KILLED);
    const size = lfsBytes(files);
    const before = hub.cdnBytesSent();
    hub.setBytesPerSecond(8 * MB);
    const id = await create('reader-k', [{ name: KILLED }]);
    await vi.waitFor(() => expect(hub.cdnBytesSent() - before).toBeGreaterThan(24 * MB), {
      timeout: 30_000,
      interval: 100,
    });
    expect((await workersOf(id))[0]?.state.state).toBe('downloading');
    expect(await gpusHeld()).toBe(held);
    server?.child.kill('SIGKILL');
    await new Promise((resolve) => server?.child.once('exit', resolve));
    const requestsBefore = hub.requests.length;
    const sentBeforeRestart = hub.cdnBytesSent();
    hub.setBytesPerSecond(null);
    await serve();
    await running(id, 90_000);
    const resumed = hub.requests
      .slice(requestsBefore)
      .filter((request) => request.server === 'cdn' && request.method === 'GET');
    expect(resumed.map((request) => request.range)).toEqual([expect.stringMatching(/^bytes=[1-9]\d*-$/)]);
    // Only what the first server had not written was sent again.
    expect(hub.cdnBytesSent() - sentBeforeRestart).toBeLessThan(size);
    expect(hub.cdnBytesSent() - before).toBeGreaterThanOrEqual(size);
  }, 180_000);

  it("refuses an owner whose token the hub refuses a gated model that another owner's worker has in the cache", async () => {
    expect((await api('secret/save', { name: 'hf', value: 'hf_granted' }, 'ann')).status).toBe(200);
    expect((await api('secret/save', { name: 'hf', value: 'hf_not_granted' }, 'bob')).status).toBe(200);
    const models = [{ name: GATED, tokenSecret: 'hf' }];
    const granted = await api(
      'endpoint/create',
      { endpoint: { ...testWorkerEndpoint(image), name: 'gated-ann', models } },
      'ann',
    );
    expect(granted.status, granted.text).toBe(200);
    await running(granted.body.id, 60_000, 'ann');
    for (const named of [models, [{ name: GATED }]]) {
      const refused = await api(
        'endpoint/create',
        { endpoint: { ...testWorkerEndpoint(image), name: 'gated-bob', models: named } },
        'bob',
      );
      expect(refused.status, refused.text).toBe(400);
      expect(refused.body.reason).toBe('MODEL_GATED');
      expect(refused.body.message).toContain(GATED);
    }
  }, 90_000);
});
