/**
 * docs/jobs.md "Moving from RunPod" replayed as written against a real `corral serve` (the built binary, the `local`
 * runtime, Corral's RunPod protocol test worker standing in for the registry image): the doc's create body, which
 * names the endpoint "sdxl" and gives no appName, then the doc's calls by that name through runpod-sdk (npm), the
 * curl form of `/v2/{endpoint}/...` and `corral jobs run`; `corral endpoints get` by the name, whose printed curl
 * runs a job as pasted. And the name of another owner's private endpoint answers as not found.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import runpodSdk from 'runpod-sdk';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  callApi,
  localRuntimeArgs,
  printServeLog,
  runCorral,
  type ServeProcess,
  startServeWithConfig,
} from '../support/process.js';

const KEY = 'e2e-runpod-names-operator-key-0123';
const WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));
const JOBS_DOC = readFileSync(new URL('../../docs/jobs.md', import.meta.url), 'utf8');

/** The doc's section, from its heading to the next one of its level. */
function section(heading: string): string {
  const start = JOBS_DOC.indexOf(`## ${heading}\n`);
  if (start < 0) throw new Error(`docs/jobs.md has no section "${heading}"`);
  const end = JOBS_DOC.indexOf('\n## ', start + 1);
  return JOBS_DOC.slice(start, end < 0 ? undefined : end);
}

const MOVING = section('Moving from RunPod');
/** The create call's JSON body (`-d '...'`), as the doc writes it. */
const DOC_CREATE_BODY = JSON.parse(/endpoint\/create"[\s\S]*?-d '([\s\S]*?)'/.exec(MOVING)?.[1] ?? 'null');
/** The endpoint the doc's runpod-sdk example calls. */
const DOC_ENDPOINT = /runpod\.endpoint\('([^']+)'\)/.exec(MOVING)?.[1];

/** A command line as a person pastes it into a shell. */
function runShell(
  line: string,
  env: NodeJS.ProcessEnv,
): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(
      '/bin/sh',
      ['-c', line],
      { env: { ...process.env, ...env }, timeout: 120_000 },
      (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}

describe('docs/jobs.md "Moving from RunPod" as written', () => {
  let server: ServeProcess | undefined;
  let close: (() => Promise<void>) | undefined;
  /** Non-admin API keys of two owners. */
  const keys: Record<'a' | 'b', string> = { a: '', b: '' };
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

  const gateway = () => server?.gatewayUrl ?? '';
  const v2 = (key: string, method: string, path: string, body?: unknown) =>
    fetch(`${gateway()}/v2/${path}`, {
      method,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
  /** The doc's endpoint, its image swapped for the local test worker (no registry here). */
  const localWorker = (endpoint: Record<string, unknown>) => ({
    ...endpoint,
    image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${WORKER}'` },
    envs: [{ key: 'RUNPOD_PING_INTERVAL', value: '1000' }],
  });

  beforeAll(async () => {
    ({ server, close } = await startServeWithConfig({
      dirPrefix: 'corral-e2e-runpod-names-',
      configYaml: '',
      serveArgs: localRuntimeArgs('h100-80g:2'),
      apiKey: KEY,
    }));
    for (const owner of ['a', 'b'] as const) {
      const made = await callApi(server, KEY, 'apikey/create', { name: owner, ownerId: `team-${owner}` });
      expect(made.status, made.text).toBe(200);
      keys[owner] = made.body.key;
    }
  }, 60_000);
  afterAll(() => close?.(), 60_000);

  it('creates "sdxl" without an appName, then runpod-sdk, curl and corral jobs call it by that name', async () => {
    expect(DOC_CREATE_BODY.endpoint).toMatchObject({ name: 'sdxl', type: 'queue' });
    expect(DOC_CREATE_BODY.endpoint.appName).toBeUndefined();
    expect(DOC_ENDPOINT).toBe('sdxl');
    if (!server || DOC_ENDPOINT === undefined) throw new Error('no server');
    // The local runtime lets only an admin key create (RUNTIME_SINGLE_TENANT): the operator's, for team-a.
    const created = await callApi(
      server,
      KEY,
      'endpoint/create',
      { endpoint: localWorker(DOC_CREATE_BODY.endpoint) },
      'team-a',
    );
    expect(created.status, created.text).toBe(200);
    expect(created.body.appName).not.toBe('sdxl');

    // runpod-sdk, as the doc's block calls it.
    const endpoint = runpodSdk(keys.a, { baseUrl: `${gateway()}/v2` }).endpoint(DOC_ENDPOINT);
    if (!endpoint) throw new Error('no endpoint');
    const log = vi.spyOn(console, 'log').mockImplementation(() => undefined);
    try {
      const { id } = await endpoint.run({ input: { prompt: 'a cat' } }, 10_000);
      await vi.waitFor(async () => expect((await endpoint.status(id, 10_000)).status).toBe('COMPLETED'), {
        timeout: 90_000,
        interval: 250,
      });
      expect(await endpoint.runSync({ input: { prompt: 'a cat' } }, 60_000)).toMatchObject({
        status: 'COMPLETED',
        output: { echo: { prompt: 'a cat' } },
      });
      expect(await endpoint.health()).toMatchObject({ jobs: expect.objectContaining({ completed: 2 }) });
      expect(await endpoint.purgeQueue()).toMatchObject({ status: 'completed' });
    } finally {
      log.mockRestore();
    }

    // curl: http://{gateway address}/v2/{endpoint}/..., the key as Authorization: Bearer.
    const runsync = await v2(keys.a, 'POST', 'sdxl/runsync?wait=60000', { input: { prompt: 'a dog' } });
    expect(runsync.status).toBe(200);
    expect(await runsync.json()).toMatchObject({
      status: 'COMPLETED',
      output: { echo: { prompt: 'a dog' } },
    });

    // corral jobs with the two variables the first start prints.
    const ran = await runCorral(['jobs', 'run', 'sdxl', '{"prompt": "a bird"}'], {
      CORRAL_API_URL: server.apiUrl,
      CORRAL_API_KEY: keys.a,
      CORRAL_GATEWAY_URL: '',
    });
    expect(ran.code, ran.stderr).toBe(0);
    expect(JSON.parse(ran.stdout)).toMatchObject({ echo: { prompt: 'a bird' } });

    // corral endpoints get names it by name too, shows its type, and its Call runs a job as printed.
    const env = { CORRAL_API_URL: server.apiUrl, CORRAL_API_KEY: keys.a };
    const shown = await runCorral(['endpoints', 'get', 'sdxl'], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toMatch(/^Type: +queue$/m);
    expect(shown.stdout).toContain(`POST ${gateway()}/v2/${created.body.id}/runsync`);
    const curl = /^Call: +(curl .*)$/m.exec(shown.stdout)?.[1] ?? '';
    const called = await runShell(curl, env);
    expect(called.code, called.stderr).toBe(0);
    expect(JSON.parse(called.stdout)).toMatchObject({ status: 'COMPLETED', output: { echo: {} } });
  }, 240_000);

  it("answers 404 for the name of another owner's private endpoint, and its owner finds it", async () => {
    if (!server) throw new Error('no server');
    const created = await callApi(
      server,
      KEY,
      'endpoint/create',
      {
        endpoint: localWorker({
          name: 'private-b',
          type: 'queue',
          workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1 },
        }),
      },
      'team-b',
    );
    expect(created.status, created.text).toBe(200);
    const stranger = await v2(keys.a, 'POST', 'private-b/run', { input: {} });
    expect(stranger.status).toBe(404);
    expect(await stranger.json()).toMatchObject({ reason: 'ENDPOINT_NOT_FOUND' });
    const listed = await runCorral(['jobs', 'list', 'private-b'], {
      CORRAL_API_URL: server.apiUrl,
      CORRAL_API_KEY: keys.a,
      CORRAL_GATEWAY_URL: '',
    });
    expect(listed.code).not.toBe(0);
    expect(listed.stderr).toContain('private-b');
    const health = await v2(keys.b, 'GET', 'private-b/health');
    expect(health.status).toBe(200);
  }, 60_000);
});
