/**
 * `corral jobs` with only the two variables the first start prints (CORRAL_API_URL and CORRAL_API_KEY) reaches the
 * gateway of a real `corral serve`, whose ports are not the defaults: the CLI asks the API where its gateway is.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { callApi, runCorral, type ServeProcess, startServeWithConfig } from '../support/process.js';

const KEY = 'e2e-jobs-gateway-url-key-0123456789';

describe('corral jobs finds the gateway through the API', () => {
  let server: ServeProcess;
  let close: () => Promise<void>;

  beforeAll(async () => {
    ({ server, close } = await startServeWithConfig({
      dirPrefix: 'corral-e2e-jobs-url-',
      configYaml: '',
      serveArgs: ['--runtime', 'fake', '--gpus', 'h100-80g:1'],
      apiKey: KEY,
    }));
  }, 60_000);
  afterAll(async () => {
    await close?.();
  });

  it('lists an endpoint’s jobs with CORRAL_API_URL and CORRAL_API_KEY alone', async () => {
    const created = await callApi(server, KEY, 'endpoint/create', {
      endpoint: {
        name: 'jobs-url',
        image: { image: 'corral-test-worker:latest' },
        ports: [{ port: 8000 }],
        workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1 },
      },
    });
    expect(created.status, created.text).toBe(200);
    expect(new URL(server.gatewayUrl).port).not.toBe('8000');
    const listed = await runCorral(['jobs', 'list', created.body.id, '--json'], {
      CORRAL_API_URL: server.apiUrl,
      CORRAL_API_KEY: KEY,
      CORRAL_GATEWAY_URL: '',
    });
    expect(listed.stderr).toBe('');
    expect(listed.code).toBe(0);
    expect(JSON.parse(listed.stdout)).toMatchObject({ jobs: [] });
  }, 60_000);
});
