/**
 * Jobs on the Docker runtime end to end (issue 22, item 8: workers reach Corral, and nothing else): `corral serve`
 * (the built binary) with `--runtime docker` and its host guard, a `queue` endpoint whose workers are the RunPod
 * protocol test worker in the test image (the command ["/runpod-worker.mjs"]). A first `run` wakes the endpoint from
 * zero and completes with its output, `runsync` answers with it, and a worker reaches the worker-facing listener (on
 * the listener network's gateway address) but not the gateway's port at that same address.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { listenerNetworkName } from '../../src/runtime/docker/listener-network.js';
import { guardedDockerAvailable } from '../support/host-guard.js';
import { callJobs } from '../support/jobs-client.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import { ensureTestImage, removeInstallationResources } from '../support/test-image.js';

const KEY = 'e2e-jobs-docker-operator-key-0123';

describe.runIf(guardedDockerAvailable())('jobs on a queue endpoint with the Docker runtime', () => {
  let dataDir: string;
  let server: ServeProcess | undefined;
  let endpointId = '';
  beforeEach(({ onTestFailed }) => onTestFailed(() => server && printServeLog(server)));

  const jobs = (method: string, path: string, body?: unknown) =>
    callJobs(server?.gatewayUrl ?? '', KEY, { method, endpoint: endpointId, path, body });
  const completed = async (input: unknown) => {
    const run = await jobs('POST', 'run', { input });
    expect(run.body).toMatchObject({ status: 'IN_QUEUE' });
    return vi.waitFor(
      async () => {
        const status = (await jobs('GET', `status/${run.body.id}`)).body;
        expect(status.status).toBe('COMPLETED');
        return status;
      },
      { timeout: 120_000, interval: 250 },
    );
  };

  beforeAll(async () => {
    const image = await ensureTestImage();
    dataDir = mkdtempSync(join(tmpdir(), 'corral-e2e-jobs-docker-'));
    writeFileSync(
      join(dataDir, 'corral.yaml'),
      'controller: { startupTimeoutSeconds: 30, reconcileIntervalMs: 200 }\n',
    );
    server = await startServe(
      // The gateway on every address: without the host guard a worker would reach it at the listener's address.
      [
        '--runtime',
        'docker',
        '--gpus',
        'h100-80g:2',
        '--gateway-addr',
        '0.0.0.0:0',
        '--config',
        join(dataDir, 'corral.yaml'),
      ],
      { CORRAL_DATA_DIR: dataDir, CORRAL_API_KEY: KEY },
    );
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        name: 'runpod-docker',
        type: 'queue',
        image: { image, command: '/runpod-worker.mjs' },
        workerConfig: { minNum: 0, maxNum: 1, freeTimeout: 300, maxConcurrent: 1, gpuNum: 1 },
        products: [{ id: 'h100-80g' }],
        envs: [{ key: 'RUNPOD_PING_INTERVAL', value: '1000' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    endpointId = created.body.id;
  }, 240_000);

  afterAll(async () => {
    if (server) {
      await callApi(server, KEY, 'endpoint/delete', { id: endpointId }).catch(() => undefined);
      await server.stop();
      removeInstallationResources(server.installationId);
    }
    rmSync(dataDir, { recursive: true, force: true });
  }, 60_000);

  it('wakes from zero on a run, completes it with the output, and answers runsync', async () => {
    const done = await completed({ sleepMs: 10, n: 1 });
    expect(done.output).toMatchObject({ echo: { sleepMs: 10, n: 1 } });
    const sync = await jobs('POST', 'runsync?wait=60000', { input: { n: 2 } });
    expect(sync.body).toMatchObject({ status: 'COMPLETED', output: { echo: { n: 2 } } });
  }, 180_000);

  it("a worker reaches the worker-facing listener and not the gateway's port at the same address", async () => {
    const gatewayPort = Number(new URL(server?.gatewayUrl ?? '').port);
    const workersUrl = new URL(/"workersUrl":"([^"]+)"/.exec(server?.stdout() ?? '')?.[1] ?? '');
    const network = listenerNetworkName(server?.installationId ?? '');
    const listenerAddress = execFileSync(
      'docker',
      ['network', 'inspect', network, '--format', '{{(index .IPAM.Config 0).Gateway}}'],
      { encoding: 'utf8' },
    ).trim();
    // The URL queue workers are given is the listener network's gateway, where the listener binds.
    expect(workersUrl.hostname).toBe(listenerAddress);
    const workersPort = Number(workersUrl.port);
    expect((await completed({ connect: { port: workersPort } })).output).toEqual({ connected: true });
    expect((await completed({ connect: { port: gatewayPort } })).output).toMatchObject({ connected: false });
  }, 180_000);
});
