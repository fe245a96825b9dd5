// The worker-facing listener on Docker, with the real engine and the host guard's real iptables rules: a container
// on a worker network reaches the listener's address and port (its routes; 404 for the rest), and still not another
// port of the host, nor the listener's port at another host address. Needs root, iptables and Docker.
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedDockerAvailable } from '../../test/support/host-guard.js';
import { ensureTestImage } from '../../test/support/test-image.js';
import { closeServer } from '../../test/support/test-servers.js';
import { createWorkerNetwork, fromWorker, removeNetworks } from '../../test/support/worker-network.js';
import { HostGuard } from '../runtime/docker/host-guard.js';
import { ensureListenerNetwork, listenerNetworkName } from '../runtime/docker/listener-network.js';
import { workerFacingBaseUrl } from './worker-facing-url.js';
import { type RunningWorkerListener, startWorkerListener } from './worker-listener.js';

const logger = pino({ level: 'silent' });
const available = guardedDockerAvailable();

describe.skipIf(!available)('the worker-facing listener on Docker, behind the host guard', () => {
  const docker = new Docker();
  const installationId = `wl${randomBytes(5).toString('hex')}`;
  const workerNetwork = `corral-test-wl-${installationId}`;
  let image: string;
  let gateway: string;
  let workerGateway: string;
  let listener: RunningWorkerListener;
  let hostService: Server;
  let guarded: HostGuard | undefined;

  beforeAll(async () => {
    image = await ensureTestImage();
    gateway = await ensureListenerNetwork({
      docker,
      installationId,
      subnets: { pool: '172.31.0.0/16', prefixLength: 28 },
      logger,
    });
    listener = await startWorkerListener({
      address: { host: gateway, port: 0 },
      logger,
      handler: (request, response) => {
        if (!request.url?.startsWith('/v2/job-take/')) return false;
        response.end('take ok');
        return true;
      },
    });
    // Another service of the host, on every address: workers must not reach it.
    hostService = createServer((_request, response) => response.end('host service'));
    await new Promise<void>((resolve) => hostService.listen(0, '0.0.0.0', resolve));
    workerGateway = (await createWorkerNetwork(docker, workerNetwork)).gateway;
  }, 240_000);

  afterAll(async () => {
    // This listener's hole goes with it; other installations' stay.
    await guarded?.release();
    await listener?.close();
    await closeServer(hostService);
    await removeNetworks(docker, [workerNetwork, listenerNetworkName(installationId)]);
  });

  it('a worker reaches the listener and its routes, and still no other host port or address', async () => {
    const port = listener.address.port;
    guarded = new HostGuard({
      logger,
      blockHost: true,
      storageNosuid: false,
      workerListener: { address: gateway, port, installationId },
    });
    expect(await guarded.firewall()).toBe(true);
    const base = workerFacingBaseUrl({ runtime: 'docker', address: gateway, port });
    const otherPort = (hostService.address() as AddressInfo).port;
    const seen = await fromWorker(image, workerNetwork, [
      `${base}/v2/job-take/worker-1?x=1`,
      `${base}/admin`,
      `http://${gateway}:${otherPort}/`,
      `http://${workerGateway}:${otherPort}/`,
      `http://${workerGateway}:${port}/v2/job-take/worker-1?x=1`,
    ]);
    expect(seen).toEqual([
      '200 take ok',
      '404 {"error":"not a worker route"}',
      'error ECONNREFUSED',
      'error ECONNREFUSED',
      'error ECONNREFUSED',
    ]);
  }, 120_000);
});
