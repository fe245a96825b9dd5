/**
 * Images are pulled when an endpoint is created, before any request (issue 9, item 2), end to end: `corral serve`
 * on Docker with a registry of Debian's `docker-registry` package on 127.0.0.1 (the only registry reachable here).
 * A `minNum: 0` endpoint whose image does not exist is `failed (IMAGE_PULL_FAILED)` within seconds of its create
 * without any request, and its URL answers 503 at once; one whose image is on the registry is pulled at create,
 * and its first request starts a worker without a pull.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { callApi, printServeLog, type ServeProcess, startServe } from '../support/process.js';
import {
  dockerAvailable,
  ensureTestImage,
  pushTestImageCopy,
  removeInstallationResources,
} from '../support/test-image.js';
import { REGISTRY_BIN, type TestRegistry, testRegistry } from '../support/test-registry.js';

const KEY = 'e2e-pull-on-create-operator-key-01234';
const withRegistry =
  integrationAvailable('Docker', dockerAvailable(), 'start dockerd (scripts/provision.sh does)') &&
  integrationAvailable(
    'docker-registry',
    existsSync(REGISTRY_BIN),
    `${REGISTRY_BIN} is missing: apt-get install -y docker-registry (scripts/provision.sh does)`,
  );

describe.runIf(withRegistry)('images pulled at create, with corral serve on Docker', () => {
  const run = Math.random().toString(36).slice(2, 8);
  let dir: string;
  let registry: TestRegistry;
  let pushed: string;
  /** The local test image (corral-test-worker:latest). */
  let base: string;
  /** The engine's manifest requests before any endpoint (the push's). */
  let pushedPulls: number;
  let server: ServeProcess;
  beforeEach(({ onTestFailed }) =>
    onTestFailed(() => {
      printServeLog(server);
      process.stderr.write(`--- docker-registry ---\n${registry?.log.slice(-4000)}\n`);
    }),
  );

  const create = async (image: string) => {
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        image: { image },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1 },
        healthy: { path: '/health' },
        products: [{ id: 'h100-80g' }],
      },
    });
    expect(created.status, created.text).toBe(200);
    const id = created.body.id as string;
    return { id, appName: (await endpointOf(id)).appName as string, at: Date.now() };
  };
  const endpointOf = async (id: string) => (await callApi(server, KEY, `endpoint?id=${id}`)).body.endpoint;
  const invoke = async (appName: string, path: string) => {
    const started = Date.now();
    const response = await fetch(`${server.gatewayUrl}/e/${appName}${path}`, {
      headers: { authorization: `Bearer ${KEY}` },
      signal: AbortSignal.timeout(60_000),
    });
    const text = await response.text();
    return { status: response.status, text, ms: Date.now() - started };
  };
  const containersOf = (endpointId: string) =>
    execFileSync('docker', ['ps', '-aq', '--filter', `label=corral.dev/endpoint=${endpointId}`], {
      encoding: 'utf8',
    }).trim();
  const imagePresent = (image: string) => {
    try {
      execFileSync('docker', ['image', 'inspect', image], { stdio: 'ignore' });
      return true;
    } catch {
      return false;
    }
  };

  beforeAll(async () => {
    base = await ensureTestImage();
    dir = mkdtempSync(join(tmpdir(), 'corral-e2e-pull-on-create-'));
    registry = await testRegistry(dir);
    await registry.start();
    // The test worker on the registry under a name of this run, absent from the engine under that name: a pull
    // must fetch it (its layers are the test image's, so it is quick).
    pushed = await pushTestImageCopy(`${registry.address}/pull-on-create/worker:${run}`);
    pushedPulls = registry.enginePulls();
    // The registry is on loopback: only a listed one may be pulled from (docs/security.md, Registries).
    writeFileSync(
      join(dir, 'corral.yaml'),
      `controller: { reconcileIntervalMs: 200 }\nregistries: { allowPrivate: ["${registry.address}"] }\n`,
    );
    server = await startServe(
      ['--runtime', 'docker', '--gpus', 'h100-80g:2', '--config', join(dir, 'corral.yaml')],
      { CORRAL_DATA_DIR: join(dir, 'data'), CORRAL_API_KEY: KEY },
    );
  }, 180_000);

  afterAll(async () => {
    await server?.stop();
    if (server) removeInstallationResources(server.installationId);
    if (pushed) execFileSync('docker', ['rmi', '-f', pushed], { stdio: 'ignore' });
    await registry?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('a minNum 0 endpoint whose image does not exist is failed within seconds, without a request; its URL answers 503 at once', async () => {
    const missing = `corral-does-not-exist-${run}:nope`;
    const { id, appName, at } = await create(missing);
    const state = await vi.waitFor(
      async () => {
        const endpoint = await endpointOf(id);
        expect(endpoint.state).toMatchObject({ state: 'failed', error: 'IMAGE_PULL_FAILED' });
        return endpoint.state;
      },
      { timeout: 10_000, interval: 100 },
    );
    const failedAfter = Date.now() - at;
    expect(failedAfter).toBeLessThan(5_000);
    expect(state.message).toContain(`cannot pull image ${missing}`);
    expect((await endpointOf(id)).workers).toEqual([]);
    expect(containersOf(id)).toBe('');

    const answer = await invoke(appName, '/work');
    expect(answer.status).toBe(503);
    expect(JSON.parse(answer.text)).toMatchObject({
      reason: 'ENDPOINT_FAILED',
      metadata: { endpointError: 'IMAGE_PULL_FAILED' },
    });
    expect(answer.ms).toBeLessThan(1_000);
    console.log(
      `missing image: failed ${failedAfter} ms after its create; its URL answered 503 in ${answer.ms} ms`,
    );
    await callApi(server, KEY, 'endpoint/delete', { id });
  }, 60_000);

  it('a local image named one letter short is failed saying which local image was meant', async () => {
    const colon = base.lastIndexOf(':');
    const typo = `${base.slice(0, colon - 1)}${base.slice(colon)}`;
    const { id } = await create(typo);
    const state = await vi.waitFor(
      async () => {
        const endpoint = await endpointOf(id);
        expect(endpoint.state).toMatchObject({ state: 'failed', error: 'IMAGE_PULL_FAILED' });
        return endpoint.state;
      },
      { timeout: 10_000, interval: 100 },
    );
    expect(state.message).toContain(`no image ${typo} on this machine or its registry (`);
    expect(state.message).toContain(`did you mean ${base}?`);
    await callApi(server, KEY, 'endpoint/delete', { id });
  }, 60_000);

  it('an image on the registry is pulled at create, and the first request starts a worker without a pull', async () => {
    expect(imagePresent(pushed)).toBe(false);
    const { id, appName, at } = await create(pushed);
    await vi.waitFor(
      async () => {
        expect(imagePresent(pushed)).toBe(true);
        expect((await endpointOf(id)).state).toMatchObject({
          state: 'serving',
          error: '',
          message: 'scaled to zero; a request wakes it',
        });
      },
      { timeout: 30_000, interval: 100 },
    );
    const readyAfter = Date.now() - at;
    // Pulled without a worker, before any request.
    expect(containersOf(id)).toBe('');
    const pulls = registry.enginePulls();
    expect(pulls).toBeGreaterThan(pushedPulls);

    const answer = await invoke(appName, '/health');
    expect([answer.status, answer.text]).toEqual([200, '{"ok":true}']);
    // The wake pulled nothing: the registry was asked for no manifest again.
    expect(registry.enginePulls()).toBe(pulls);
    console.log(
      `registry image: pulled and serving ${readyAfter} ms after its create; first request ${answer.ms} ms`,
    );
    await callApi(server, KEY, 'endpoint/delete', { id });
  }, 120_000);
});
