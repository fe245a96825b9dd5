/**
 * Containers changed behind Corral's back, end to end: `corral serve` as a process on the Docker runtime with one
 * simulated GPU and the test worker image. A `docker restart` of a worker (through dockerode) moves its published
 * port: the worker is served through the gateway again within seconds, at the new port, without a replacement. A
 * worker told to fail its health check after it had served is failed UNHEALTHY past the controller's limit and
 * replaced, its one GPU going to the replacement.
 */
import Docker from 'dockerode';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { integrationAvailable } from '../support/integration.js';
import { apiOf, printServeLog, type ServeProcess, startServeWithConfig } from '../support/process.js';
import { dockerAvailable, ensureTestImage, testWorkerEndpoint } from '../support/test-image.js';

const KEY = 'e2e-restarted-workers-key-0123456789';
const UNHEALTHY_TIMEOUT_S = 4;
/** How soon a restarted worker must be served again: "within seconds", with room for a loaded machine. */
const SERVED_AGAIN_MS = 15_000;
const withDocker = integrationAvailable(
  'Docker',
  dockerAvailable(),
  'start dockerd (scripts/provision.sh does)',
);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe.runIf(withDocker)(
  'containers restarted or left unhealthy, with corral serve as a process on Docker',
  () => {
    const docker = new Docker();
    let close: (() => Promise<void>) | undefined;
    let image: string;
    let server: ServeProcess | undefined;
    beforeEach(({ onTestFailed }) => onTestFailed(() => printServeLog(server)));

    const { call, endpointOf } = apiOf(() => server, KEY);
    const invoke = async (appName: string, path = '/work') => {
      const response = await fetch(`${server?.gatewayUrl}/e/${appName}${path}`, {
        method: path === '/work' ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${KEY}` },
        signal: AbortSignal.timeout(10_000),
      });
      await response.arrayBuffer();
      return { status: response.status, worker: response.headers.get('x-corral-worker') ?? '' };
    };
    /** Polls until `check` returns a value (it returns undefined until then), for at most `ms`. */
    const until = async <T>(what: string, ms: number, check: () => Promise<T | undefined>): Promise<T> => {
      const deadline = Date.now() + ms;
      for (;;) {
        const value = await check();
        if (value !== undefined) return value;
        if (Date.now() > deadline) throw new Error(`not within ${ms} ms: ${what}`);
        await sleep(100);
      }
    };
    const create = async (): Promise<{ id: string; appName: string }> => {
      const { status, body } = await call('endpoint/create', {
        endpoint: { ...testWorkerEndpoint(image), healthy: { path: '/health', period: 1 } },
      });
      expect(status, JSON.stringify(body)).toBe(200);
      return { id: body.id as string, appName: (await endpointOf(body.id)).appName as string };
    };
    const servedBy = (appName: string, ms: number) =>
      until(`${appName} served`, ms, async () => {
        const answer = await invoke(appName).catch(() => undefined);
        return answer?.status === 200 ? answer.worker : undefined;
      });
    /** The worker's container and the host port its app port is published on. */
    const containerOf = async (workerId: string) => {
      const [listed] = await docker.listContainers({ filters: { label: [`corral.dev/worker=${workerId}`] } });
      if (!listed) throw new Error(`no running container for ${workerId}`);
      const container = docker.getContainer(listed.Id);
      const port = (await container.inspect()).NetworkSettings.Ports['8000/tcp']?.[0]?.HostPort;
      return { container, port: Number(port) };
    };

    beforeAll(async () => {
      image = await ensureTestImage();
      ({ server, close } = await startServeWithConfig({
        dirPrefix: 'corral-e2e-restarted-',
        configYaml: `controller: { unhealthyTimeoutSeconds: ${UNHEALTHY_TIMEOUT_S} }\n`,
        serveArgs: ['--runtime', 'docker', '--gpus', 'h100-80g:1'],
        apiKey: KEY,
      }));
    }, 180_000);

    afterAll(async () => {
      await close?.();
    });

    it('docker restart moves the published port: the same worker is served again within seconds at the new one', async () => {
      const { id, appName } = await create();
      const worker = await servedBy(appName, 90_000);
      const before = await containerOf(worker);

      await before.container.restart({ t: 1 });
      const restartedAt = Date.now();
      const after = await containerOf(worker);
      expect(after.port).not.toBe(before.port);
      const answeredBy = await servedBy(appName, SERVED_AGAIN_MS);
      const servedAfterMs = Date.now() - restartedAt;
      // The same worker, not a replacement: its container started again and its new address was picked up.
      expect(answeredBy).toBe(worker);
      const workers = (await endpointOf(id)).workers;
      expect(workers.map((w: any) => [w.id, w.state.state])).toEqual([[worker, 'running']]);
      console.log(
        `docker restart: port ${before.port} -> ${after.port}, served again ${servedAfterMs} ms after the restart returned`,
      );
      await call('endpoint/delete', { id });
      await until('the worker removed', 30_000, async () =>
        (await docker.listContainers({ filters: { label: [`corral.dev/worker=${worker}`] } })).length === 0
          ? true
          : undefined,
      );
    }, 180_000);

    it('a worker told to fail its health check is failed UNHEALTHY past the limit and replaced on the GPU it freed', async () => {
      const { id, appName } = await create();
      const sick = await servedBy(appName, 90_000);
      const told = await invoke(appName, '/health/fail');
      expect(told).toEqual({ status: 200, worker: sick });
      const unhealthyAt = await until('the worker unhealthy', 20_000, async () => {
        const worker = (await endpointOf(id)).workers.find((w: any) => w.id === sick);
        return worker?.state.state === 'unhealthy' ? Date.now() : undefined;
      });

      // One GPU: the replacement can only run once the sick worker's container is gone.
      const replacement = await servedBy(appName, 60_000);
      expect(replacement).not.toBe(sick);
      expect(Date.now() - unhealthyAt).toBeGreaterThanOrEqual((UNHEALTHY_TIMEOUT_S - 1) * 1000);
      const workers = (await endpointOf(id)).workers;
      expect(workers.find((w: any) => w.id === sick)?.state).toEqual({
        state: 'failed',
        error: 'UNHEALTHY',
        message: `unhealthy for more than ${UNHEALTHY_TIMEOUT_S} s after it had served; last probe: HTTP 503 from /health`,
      });
      expect(workers.find((w: any) => w.id === replacement)?.state.state).toBe('running');
      expect(await docker.listContainers({ filters: { label: [`corral.dev/worker=${sick}`] } })).toEqual([]);
      await call('endpoint/delete', { id });
    }, 180_000);
  },
);
