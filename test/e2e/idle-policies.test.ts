/**
 * An idle policy with `corral serve` as a process (the built binary, the `local` runtime; docs/idle-policies.md): with
 * a policy of 8 seconds, an endpoint nobody calls has its maxNum lowered to 0 and says so in its log (the API's
 * `endpoint/log` and `corral endpoints log`), while an endpoint called through the gateway all along, and a queue
 * endpoint given a job every 300 ms, keep their maxNum.
 */
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  callApi,
  localRuntimeArgs,
  printServeLog,
  runCorral,
  type ServeProcess,
  startServeWithConfig,
} from '../support/process.js';
import { localWorkerEndpoint } from '../support/test-image.js';

const KEY = 'e2e-idle-policies-operator-key-0000001';
const RUNPOD_WORKER = fileURLToPath(new URL('../fixtures/worker/runpod-worker.mjs', import.meta.url));
/** 8 seconds, in days: each check comes a second apart (a tenth of the step, at least a second). */
const CONFIG = `quotas:\n  idlePolicy: { steps: [{ afterDays: ${8 / 86_400}, maxWorkers: 0 }] }\n`;

describe('an idle policy, with corral serve as a process', () => {
  let server: ServeProcess | undefined;
  let close: (() => Promise<void>) | undefined;
  beforeEach(({ onTestFailed }) => onTestFailed(() => server && printServeLog(server)));

  beforeAll(async () => {
    const started = await startServeWithConfig({
      dirPrefix: 'corral-e2e-idle-policies-',
      configYaml: CONFIG,
      serveArgs: localRuntimeArgs('h100-80g:4'),
      apiKey: KEY,
    });
    server = started.server;
    close = started.close;
  }, 60_000);

  afterAll(() => close?.(), 60_000);

  const api = (path: string, body?: unknown) => callApi(server as ServeProcess, KEY, path, body);
  const endpointOf = async (id: string) => (await api(`endpoint?id=${id}`)).body.endpoint;

  it('lowers the maxNum of an endpoint without traffic, with an event, and leaves a called one as it is', async () => {
    const busy = { ...localWorkerEndpoint('busy', 'busy:local'), appName: 'idle-busy' };
    busy.workerConfig = { ...busy.workerConfig, minNum: 0, maxNum: 2 };
    const busyId = (await api('endpoint/create', { endpoint: busy })).body.id as string;
    const queueId = (
      await api('endpoint/create', {
        endpoint: {
          name: 'idle-jobs',
          type: 'queue',
          workerConfig: { minNum: 0, maxNum: 2, freeTimeout: 300, maxConcurrent: 1, gpuNum: 1 },
          image: { image: 'runpod-worker:local', command: `'${process.execPath}' '${RUNPOD_WORKER}'` },
        },
      })
    ).body.id as string;
    // Called every 300 ms from its creation (the first calls wait for its worker), and a job submitted to the queue
    // endpoint as often, until the test ends.
    let calling = true;
    const call = (path: string, init: RequestInit = {}) =>
      fetch(`${server?.gatewayUrl}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${KEY}`, 'content-type': 'application/json' },
      }).catch(() => undefined);
    const calls = (async () => {
      while (calling) {
        await Promise.all([
          call('/e/idle-busy/work?ms=1'),
          call(`/v2/${queueId}/run`, { method: 'POST', body: JSON.stringify({ input: { mark: 'x' } }) }),
        ]);
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
    })();
    try {
      const quiet = { ...localWorkerEndpoint('quiet', 'quiet:local'), appName: 'idle-quiet' };
      quiet.workerConfig = { ...quiet.workerConfig, minNum: 0, maxNum: 2 };
      const created = await api('endpoint/create', { endpoint: quiet });
      expect(created.status, created.text).toBe(200);
      const quietId = created.body.id as string;
      expect((await endpointOf(quietId)).workerConfig.maxNum).toBe(2);

      await vi.waitFor(async () => expect((await endpointOf(quietId)).workerConfig.maxNum).toBe(0), {
        timeout: 20_000,
        interval: 250,
      });
      const events = (await api(`endpoint/log?id=${quietId}&limit=1000`)).body.events as {
        type: string;
        message: string;
        data: Record<string, unknown>;
      }[];
      const idle = events.filter((e) => e.type === 'idle-policy');
      expect(idle).toHaveLength(1);
      expect(idle[0]?.message).toContain('maxWorkers lowered from 2 to 0');
      expect(idle[0]?.message).toContain(`corral endpoints update ${quietId} --max-workers 2`);
      expect(idle[0]?.data).toMatchObject({ step: 1, from: 2, to: 0, lastTrafficAt: null });

      const cli = await runCorral(['endpoints', 'log', quietId], {
        CORRAL_API_URL: server?.apiUrl,
        CORRAL_API_KEY: KEY,
      });
      expect(cli.code, cli.stderr).toBe(0);
      expect(cli.stdout).toContain('idle policy: no traffic since');

      // Called all along, or given jobs: their maxNum stays.
      expect((await endpointOf(busyId)).workerConfig.maxNum).toBe(2);
      expect((await endpointOf(queueId)).workerConfig.maxNum).toBe(2);
    } finally {
      calling = false;
      await calls;
    }
  }, 90_000);
});
