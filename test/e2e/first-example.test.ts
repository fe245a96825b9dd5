/**
 * The README's first example, end to end: `corral serve` as a process on Docker, and a local stand-in for
 * `nginx:latest` (no registry is reachable), an image that serves `/` and answers 404 on `/health`, as stock nginx
 * does. Created with the README's body (port 80, no health settings), it becomes ready and its URL answers; the same
 * image with a named health path it does not serve fails fast, and the request waiting for it hears why in seconds
 * (503 body and `X-Corral-Cause`), as do the endpoint's and the worker's states.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { apiOf, printServeLog, type ServeProcess, startServeWithConfig } from '../support/process.js';
import { dockerAvailable, ensureStandInImage, NGINX_STAND_IN } from '../support/test-image.js';

const KEY = 'e2e-first-example-key-0123456789';
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);

describe.runIf(withDocker)("the README's first example, with corral serve on Docker", () => {
  let close: (() => Promise<void>) | undefined;
  let server: ServeProcess | undefined;
  beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));
  const { call, endpointOf } = apiOf(() => server, KEY);

  /** The README's create body, with the stand-in's image and `extra` fields on top. */
  const create = async (name: string, extra: Record<string, unknown> = {}) => {
    const { status, body } = await call('endpoint/create', {
      endpoint: {
        name,
        image: { image: NGINX_STAND_IN.tag },
        ports: [{ port: 80 }],
        workerConfig: { minNum: 0, maxNum: 2, freeTimeout: 60, maxConcurrent: 4, gpuNum: 1 },
        ...extra,
      },
    });
    expect(status, JSON.stringify(body)).toBe(200);
    return { id: body.id as string, appName: (await endpointOf(body.id)).appName as string };
  };
  const get = async (appName: string) => {
    const started = Date.now();
    const response = await fetch(`${server?.gatewayUrl}/e/${appName}/`, {
      headers: { authorization: `Bearer ${KEY}` },
      signal: AbortSignal.timeout(120_000),
    });
    const text = await response.text();
    return {
      status: response.status,
      text,
      cause: response.headers.get('x-corral-cause'),
      ms: Date.now() - started,
    };
  };

  beforeAll(async () => {
    await ensureStandInImage(NGINX_STAND_IN.tag, NGINX_STAND_IN.lines);
    ({ server, close } = await startServeWithConfig({
      dirPrefix: 'corral-e2e-first-',
      configYaml: '',
      serveArgs: ['--runtime', 'docker', '--gpus', 'h100-80g:2'],
      apiKey: KEY,
    }));
  }, 240_000);

  afterAll(async () => {
    await close?.();
  });

  it('becomes ready with no health settings: /health answers 404, / answers 200', async () => {
    const { id, appName } = await create('hello');
    const endpoint = await endpointOf(id);
    expect(endpoint.healthy.path).toBe('/health');
    const first = await get(appName);
    expect([first.status, first.text]).toEqual([200, '{"ok":true}']);
    const worker = (await endpointOf(id)).workers.find((w: any) => w.state.state === 'running');
    expect(worker?.healthy).toBe(true);
    console.log(`README example: the first request (a cold start from zero) answered 200 in ${first.ms} ms`);
    await call('endpoint/delete', { id });
  }, 150_000);

  it('a named health path that answers 404: the waiting request gets 503 with the cause in seconds', async () => {
    const { id, appName } = await create('hello-named', { healthy: { path: '/ready' } });
    const answer = await get(appName);
    const cause = 'answered 404 on every probe for 10 s: set healthy.path to a path your app serves';
    expect(answer.status).toBe(503);
    expect(answer.cause).toBe(`GET /ready ${cause}`);
    const body = JSON.parse(answer.text);
    expect(body).toMatchObject({ reason: 'ENDPOINT_FAILED', metadata: { endpointError: 'HEALTH_TIMEOUT' } });
    expect(body.message).toContain(`GET /ready ${cause}`);
    // Seconds, not the 300 s startup deadline: the container's start, then 10 s of 404s.
    expect(answer.ms).toBeLessThan(40_000);
    const endpoint = await endpointOf(id);
    expect(endpoint.state).toEqual({
      state: 'failed',
      error: 'HEALTH_TIMEOUT',
      message: `GET /ready ${cause}`,
    });
    expect(endpoint.workers.map((w: any) => w.state)).toContainEqual({
      state: 'failed',
      error: 'HEALTH_TIMEOUT',
      message: `GET /ready ${cause}`,
    });
    // A new request is refused at once, with the same cause.
    const again = await get(appName);
    expect([again.status, again.cause]).toEqual([503, `GET /ready ${cause}`]);
    expect(again.ms).toBeLessThan(1000);
    console.log(`404 health path: the waiting request got 503 after ${answer.ms} ms; again: ${again.ms} ms`);
    await call('endpoint/delete', { id });
  }, 150_000);
});
