// The worker-facing listener on Docker, with the real engine and the host guard's real iptables rules: a container
// on a worker network reaches the listener's address and port (its routes; 404 for the rest), and still not another
// port of the host, nor the listener's port at another host address. Needs root, iptables and Docker.
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { guardedDockerAvailable } from '../../test/support/host-guard.js';
import { ensureTestImage } from '../../test/support/test-image.js';
import { createWorkerNetwork, removeNetworks } from '../../test/support/worker-network.js';
import { HostGuard } from '../runtime/docker/host-guard.js';
import { ensureListenerNetwork, listenerNetworkName } from '../runtime/docker/listener-network.js';
import { workerFacingBaseUrl } from './worker-facing-url.js';
import { type RunningWorkerListener, startWorkerListener } from './worker-listener.js';

const logger = pino({ level: 'silent' });
const available = guardedDockerAvailable();

/**
 * What a container on the worker network gets from each URL: `status body`, or `error CODE`. Asynchronous: the
 * listener answering it runs in this process.
 */
async function fromWorker(image: string, network: string, urls: string[]): Promise<string[]> {
  const script = `const t = async (u) => { try { const r = await fetch(u, { signal: AbortSignal.timeout(5000) }); return r.status + ' ' + (await r.text()); } catch (e) { return 'error ' + (e.cause?.code ?? e.name); } };
(async () => { const out = []; for (const u of JSON.parse(process.argv[1])) out.push(await t(u)); console.log(JSON.stringify(out)); })();`;
  const stdout = await new Promise<string>((resolve, reject) =>
    execFile(
      'docker',
      [
        'run',
        '--rm',
        '--network',
        network,
        '--entrypoint',
        '/node',
        image,
        '-e',
        script,
        JSON.stringify(urls),
      ],
      { encoding: 'utf8', timeout: 60_000 },
      (error, out) => (error ? reject(error) : resolve(out)),
    ),
  );
  return JSON.parse(stdout.trim().split('\n').pop() ?? '[]') as string[];
}

describe.skipIf(!available)('the worker-facing listener on Docker, behind the host guard', () => {
  const docker = new Docker();
  const installationId = `wl${randomBytes(5).toString('hex')}`;
  const workerNetwork = `corral-test-wl-${installationId}`;
  let image: string;
  let gateway: string;
  let workerGateway: string;
  let listener: RunningWorkerListener;
  let hostService: Server;

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
    // The chain as every corral serve writes it: the hole goes with this listener.
    await new HostGuard({ logger, blockHost: true, storageNosuid: false }).firewall();
    await listener?.close();
    await new Promise((resolve) => hostService?.close(resolve));
    await removeNetworks(docker, [workerNetwork, listenerNetworkName(installationId)]);
  });

  it('a worker reaches the listener and its routes, and still no other host port or address', async () => {
    const port = listener.address.port;
    const guarded = new HostGuard({
      logger,
      blockHost: true,
      storageNosuid: false,
      workerListener: { address: gateway, port },
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
