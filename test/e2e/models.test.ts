/**
 * Models on endpoints with `corral serve` as a process (the built binary, the local runtime) and the hub stand-in
 * (test/support/hub-stand-in.ts) as `models.hubUrl`: a worker waits in `downloading`, holding no GPU, with its
 * progress; it then reads the model's files where HF_HUB_CACHE points; a second endpoint naming the same model starts
 * with nothing downloaded; a gated model without a token is refused at create (docs/models.md).
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { type HubStandIn, startHubStandIn } from '../support/hub-stand-in.js';
import {
  callApi,
  localRuntimeArgs,
  printServeLog,
  type ServeProcess,
  startServeWithConfig,
} from '../support/process.js';
import { localWorkerEndpoint } from '../support/test-image.js';

const KEY = 'e2e-models-operator-key-000000001';
const MODEL = 'corral-test/tiny-llm';
const GATED = 'corral-test/gated-llm';
const MB = 1024 * 1024;

interface WorkerView {
  id: string;
  state: { state: string; message: string };
}

describe('models on endpoints, with corral serve as a process and a hub stand-in', () => {
  let hub: HubStandIn;
  let server: ServeProcess | undefined;
  let dataDir = '';
  let close: (() => Promise<void>) | undefined;
  beforeEach(({ onTestFailed }) => onTestFailed(() => server && printServeLog(server)));

  beforeAll(async () => {
    hub = await startHubStandIn({
      models: [
        { name: MODEL, weightBytes: 48 * MB, shards: 2 },
        { name: GATED, weightBytes: MB, access: { kind: 'gated', tokens: ['hf_granted'] } },
      ],
      // Slow enough to see the download under way: about 4 s for the model.
      bytesPerSecond: 12 * MB,
    });
    const started = await startServeWithConfig({
      dirPrefix: 'corral-e2e-models-',
      configYaml: `models:\n  hubUrl: ${hub.url}\n`,
      serveArgs: localRuntimeArgs('h100-80g:2'),
      apiKey: KEY,
    });
    server = started.server;
    dataDir = started.dataDir;
    close = started.close;
  }, 60_000);

  afterAll(async () => {
    await close?.();
    await hub?.close();
  }, 60_000);

  const create = (name: string, models: unknown[]) =>
    callApi(server as ServeProcess, KEY, 'endpoint/create', {
      endpoint: { ...localWorkerEndpoint(name, 'model-reader:local'), models },
    });
  const workersOf = async (id: string): Promise<WorkerView[]> =>
    (await callApi(server as ServeProcess, KEY, `endpoint?id=${id}`)).body.endpoint.workers;
  const appNameOf = async (id: string): Promise<string> =>
    (await callApi(server as ServeProcess, KEY, `endpoint?id=${id}`)).body.endpoint.appName;
  const gpusHeld = async () =>
    ((await callApi(server as ServeProcess, KEY, 'gpus')).body.gpus as { heldBy: unknown }[]).filter(
      (gpu) => gpu.heldBy !== null,
    ).length;

  it('downloads the model before the worker holds a GPU, then the worker reads it where HF_HUB_CACHE points', async () => {
    const created = await create('reader-a', [{ name: MODEL }]);
    expect(created.status, created.text).toBe(200);
    const id: string = created.body.id;
    let downloading: WorkerView | undefined;
    await vi.waitFor(
      async () => {
        downloading = (await workersOf(id)).find((worker) => worker.state.state === 'downloading');
        expect(downloading?.state.message).toMatch(
          /^model corral-test\/tiny-llm: [\d.]+ of [\d.]+ GB, \d+ MB\/s, about \d+ s left$/,
        );
      },
      { timeout: 20_000, interval: 100 },
    );
    expect(await gpusHeld()).toBe(0);
    await vi.waitFor(async () => expect((await workersOf(id))[0]?.state.state).toBe('running'), {
      timeout: 40_000,
      interval: 200,
    });
    const { commit, files } = await hub.describe(MODEL);
    expect(hub.cdnBytesSent()).toBe(
      files.reduce((sum, file) => sum + (file.sha256 === null ? 0 : file.size), 0),
    );
    // The worker copies a file of the snapshot through HF_HUB_CACHE's layout (the local runtime: the cache itself).
    const config = files.find((file) => file.sha256 === null)?.path ?? 'config.json';
    const snapshot = `${dataDir}/models/hub/models--corral-test--tiny-llm/snapshots/${commit}`;
    const read = await fetch(
      `${server?.gatewayUrl}/e/${await appNameOf(id)}/write?path=${encodeURIComponent(`${dataDir}/copied.json`)}&mode=644&from=${encodeURIComponent(`${snapshot}/${config}`)}`,
      { method: 'POST', headers: { authorization: `Bearer ${KEY}` } },
    );
    expect(read.status, await read.clone().text()).toBe(200);
  }, 90_000);

  it('starts a second endpoint naming the same model with nothing downloaded', async () => {
    const sent = hub.cdnBytesSent();
    const created = await create('reader-b', [{ name: MODEL, revision: 'main' }]);
    expect(created.status, created.text).toBe(200);
    await vi.waitFor(async () => expect((await workersOf(created.body.id))[0]?.state.state).toBe('running'), {
      timeout: 40_000,
      interval: 200,
    });
    expect(hub.cdnBytesSent()).toBe(sent);
  }, 60_000);

  it('refuses an endpoint naming a gated model without a token at create, naming the model', async () => {
    const refused = await create('reader-c', [{ name: GATED }]);
    expect(refused.status, refused.text).toBe(400);
    expect(refused.body.reason).toBe('MODEL_GATED');
    expect(refused.body.message).toContain(GATED);
  }, 30_000);
});
