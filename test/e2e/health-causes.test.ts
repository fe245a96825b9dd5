/**
 * Health failures name their cause, end to end: `corral serve` as a process on the Docker runtime with the test
 * worker image. An app listening on the wrong port and a health path that answers 503 each show their cause in the
 * worker's message within one probe period (and once in the endpoint's log); a `minNum: 0` endpoint whose worker
 * never gets healthy fails HEALTH_TIMEOUT after a short startup deadline, although the request that woke it went
 * away, and then answers 503 with the reason at once.
 */
import { execFileSync } from 'node:child_process';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { apiOf, printServeLog, type ServeProcess, startServeWithConfig } from '../support/process.js';
import { dockerAvailable, ensureTestImage, testWorkerEndpoint } from '../support/test-image.js';

const KEY = 'e2e-health-causes-key-0123456789';
/** The endpoints' probe period (the `healthy.period` default). */
const PERIOD_MS = 2000;
/**
 * The startup deadline (controller.startupTimeoutSeconds): the 503 case waits it out twice. Past the queue timeout, so
 * that the request that woke the worker has gone away before the deadline (the worker's count starts at its container's
 * start, after the request came).
 */
const STARTUP_TIMEOUT_S = 10;
const QUEUE_TIMEOUT_S = 8;
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(withDocker)(
  'health failures name their cause, with corral serve as a process on Docker',
  () => {
    let close: (() => Promise<void>) | undefined;
    let image: string;
    let server: ServeProcess | undefined;
    beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

    const { call, endpointOf } = apiOf(() => server, KEY);
    const events = async (id: string): Promise<{ type: string; message: string; data: any }[]> =>
      (await call(`endpoint/log?id=${id}&limit=1000`)).body.events;
    const create = async (overrides: Record<string, unknown>) => {
      const { status, body } = await call('endpoint/create', {
        endpoint: {
          ...testWorkerEndpoint(image),
          ...overrides,
        },
      });
      expect(status, JSON.stringify(body)).toBe(200);
      return { id: body.id as string, appName: (await endpointOf(body.id)).appName as string };
    };
    const invoke = async (appName: string) => {
      const started = Date.now();
      const response = await fetch(`${server?.gatewayUrl}/e/${appName}/work`, {
        headers: { authorization: `Bearer ${KEY}` },
        signal: AbortSignal.timeout(60_000),
      });
      return { status: response.status, body: (await response.json()) as any, ms: Date.now() - started };
    };
    /**
     * Polls the endpoint every 100 ms until its worker's message matches `cause`: the message, and how long after the
     * worker's container started (Docker's State.StartedAt: its probes begin then) it was first seen.
     */
    const causeSeen = async (
      id: string,
      cause: RegExp,
    ): Promise<{ afterStartMs: number; message: string }> => {
      const deadline = Date.now() + 60_000;
      while (Date.now() < deadline) {
        const worker = (await endpointOf(id)).workers[0];
        if (worker?.state.state === 'starting' && cause.test(worker.state.message)) {
          const seenAt = Date.now();
          const container = execFileSync(
            'docker',
            ['ps', '-q', '--no-trunc', '--filter', `label=corral.dev/worker=${worker.id}`],
            { encoding: 'utf8' },
          ).trim();
          const startedAt = execFileSync('docker', ['inspect', '-f', '{{.State.StartedAt}}', container], {
            encoding: 'utf8',
          }).trim();
          return { afterStartMs: seenAt - Date.parse(startedAt), message: worker.state.message };
        }
        await sleep(100);
      }
      throw new Error(
        `no worker message matched ${cause}: ${JSON.stringify((await endpointOf(id)).workers)}`,
      );
    };

    beforeAll(async () => {
      image = await ensureTestImage();
      ({ server, close } = await startServeWithConfig({
        dirPrefix: 'corral-e2e-health-',
        // A reconcile pass every 200 ms (1 s by default): the deadlines are acted on sooner once they pass.
        configYaml: `controller: { startupTimeoutSeconds: ${STARTUP_TIMEOUT_S}, reconcileIntervalMs: 200 }\ngateway: { queueTimeoutSeconds: ${QUEUE_TIMEOUT_S} }\n`,
        serveArgs: ['--runtime', 'docker', '--gpus', 'h100-80g:4'],
        apiKey: KEY,
      }));
    }, 180_000);

    afterAll(async () => {
      await close?.();
    });

    it('an app on the wrong port: the worker message names the port within one probe period', async () => {
      // The app ignores the PORT (8000) it was given and listens on 9999: nothing answers on the endpoint's port.
      const { id } = await create({ envs: [{ key: 'LISTEN_PORT', value: '9999' }] });
      // Docker's port proxy accepts the connection and closes it when nothing listens behind it; a runtime that
      // probes the app's port directly gets a refusal.
      const seen = await causeSeen(id, /(connection refused|connection closed) on port 8000/);
      expect(seen.message).toMatch(
        /^waiting for \/health to pass; last probe: (connection refused on port 8000|connection closed on port 8000 before any answer)$/,
      );
      expect(seen.afterStartMs).toBeLessThanOrEqual(PERIOD_MS);
      // The log tells it once the worker has had one probe period to come up.
      let health: { message: string }[] = [];
      const told = Date.now() + PERIOD_MS + 3000;
      while (health.length === 0 && Date.now() < told) {
        health = (await events(id)).filter((e) => e.type === 'health');
        if (health.length === 0) await sleep(200);
      }
      expect(health.map((e) => e.message)).toEqual([
        expect.stringMatching(/^worker \S+: connection (refused|closed) on port 8000/),
      ]);
      console.log(`wrong port: "${seen.message}" ${seen.afterStartMs} ms after its container started`);
      await call('endpoint/delete', { id });
    }, 90_000);

    it('minNum 0, a health path that answers 503: named within a probe period, HEALTH_TIMEOUT after the deadline although the request went away, then 503 with the reason', async () => {
      const { id, appName } = await create({
        // freeTimeout 1 s: once its request is gone, the starting worker is idle and would be scaled down at once.
        workerConfig: { minNum: 0, maxNum: 1, gpuNum: 1, freeTimeout: 1 },
        // Its health path answers 503 for ever (a 404 on a named path would fail fast instead: first-example.test.ts).
        envs: [{ key: 'HEALTH_NEVER', value: '1' }],
      });
      const scaledToZero = Date.now() + 10_000;
      while ((await endpointOf(id)).state.state !== 'serving' && Date.now() < scaledToZero) await sleep(100);
      // The request wakes a worker, and gives up (queue timeout) before the worker's startup deadline.
      const first = invoke(appName);
      const seen = await causeSeen(id, /HTTP 503 from \/health/);
      expect(seen.message).toBe('waiting for /health to pass; last probe: HTTP 503 from /health');
      expect(seen.afterStartMs).toBeLessThanOrEqual(PERIOD_MS);
      const timedOut = await first;
      expect([timedOut.status, timedOut.body.reason]).toEqual([504, 'QUEUE_TIMEOUT']);

      // The worker is kept to its deadline, not scaled down with its request gone: it fails HEALTH_TIMEOUT.
      const failedWorker = async () =>
        (await endpointOf(id)).workers.find((w: any) => w.state.state === 'failed')?.state;
      const deadline = Date.now() + (STARTUP_TIMEOUT_S + 10) * 1000;
      while (!(await failedWorker()) && Date.now() < deadline) await sleep(200);
      expect(await failedWorker()).toEqual({
        state: 'failed',
        error: 'HEALTH_TIMEOUT',
        message: `never passed its health check /health within ${STARTUP_TIMEOUT_S} s of starting; last probe: HTTP 503 from /health`,
      });
      // One timeout is retried (the endpoint stays as it was, not `scaled to zero`); the second fails the endpoint.
      expect((await endpointOf(id)).state.state).toBe('deploying');
      const second = await invoke(appName);
      expect(second.status).toBe(504);
      const failedBy = Date.now() + (STARTUP_TIMEOUT_S + 15) * 1000;
      while ((await endpointOf(id)).state.state !== 'failed' && Date.now() < failedBy) await sleep(200);
      const endpoint = await endpointOf(id);
      expect(endpoint.state).toMatchObject({
        state: 'failed',
        error: 'HEALTH_TIMEOUT',
        message: expect.stringContaining('HTTP 503 from /health'),
      });

      // Now a request is answered at once, with the reason.
      const refused = await invoke(appName);
      expect(refused.status).toBe(503);
      expect(refused.body).toMatchObject({
        reason: 'ENDPOINT_FAILED',
        metadata: { endpointError: 'HEALTH_TIMEOUT' },
      });
      expect(refused.body.message).toContain('HTTP 503 from /health');
      expect(refused.ms).toBeLessThan(1000);

      // The log: the cause once per worker, both failures, and no flip through `scaled to zero` on the way.
      const log = await events(id);
      // (A probe before the app listens may have found the port closed: that cause is told too, once.)
      const causes = log.filter((e) => e.type === 'health').map((e) => e.data.cause);
      expect(causes.filter((cause) => cause === 'HTTP 503 from /health')).toHaveLength(2);
      expect(log.filter((e) => e.type === 'failed').map((e) => e.data.error)).toEqual([
        'HEALTH_TIMEOUT',
        'HEALTH_TIMEOUT',
      ]);
      expect(log.filter((e) => e.type === 'state').map((e) => e.data.state)).toEqual([
        'serving',
        'deploying',
        'failed',
      ]);
      console.log(
        `503 health path: "${seen.message}" ${seen.afterStartMs} ms after its container started; the request that woke it: ${timedOut.status} "${timedOut.body.message}"; endpoint "${endpoint.state.message}"; 503 in ${refused.ms} ms`,
      );
      await call('endpoint/delete', { id });
    }, 120_000);
  },
);
