/**
 * What dockerode / docker-modem actually send, captured by a real HTTP server on 127.0.0.1:0 standing in for the
 * engine: the container-create env only in the body, image names as one escaped path segment, and an engine
 * redirect never followed (a second server, the redirect's target, receives nothing).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import Docker from 'dockerode';
import pino from 'pino';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { testWorkerSpec } from '../../../test/support/runtime-contract.js';
import { DEFAULT_SANDBOX } from '../../config/config.js';
import { containerSpec } from './container-spec.js';
import { DockerRuntime } from './docker-runtime.js';
import { refuseEngineRedirects } from './engine-redirects.js';
import { createContainerOptions, imagePathName } from './engine-requests.js';

interface Seen {
  method: string;
  url: string;
  body: string;
}

type Answer = (request: Seen) => { status: number; headers?: Record<string, string>; body?: unknown };

/** A server that records every request and answers with `answer`. */
async function recorder(answer: Answer): Promise<{ server: Server; seen: Seen[]; port: number }> {
  const seen: Seen[] = [];
  const server = createServer((req: IncomingMessage, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const request = {
        method: req.method ?? '',
        url: req.url ?? '',
        body: Buffer.concat(chunks).toString(),
      };
      seen.push(request);
      const { status, headers = {}, body } = answer(request);
      res.writeHead(status, { 'content-type': 'application/json', ...headers });
      res.end(body === undefined ? '' : JSON.stringify(body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, seen, port: (server.address() as AddressInfo).port };
}

const close = (server: Server) => new Promise((resolve) => server.close(resolve));

const SECRET = 'x'.repeat(30_000);
const workerSpec = testWorkerSpec({
  image: 'corral-test-worker:latest',
  workerId: 'w-env',
  env: Object.fromEntries(Array.from({ length: 12 }, (_, i) => [`CERT_${i}`, SECRET])),
});
const specOptions = {
  hostIp: '127.0.0.1',
  namePrefix: 'corral-',
  enforceRootfsSize: false,
  requestGpuDevices: false,
  sandbox: DEFAULT_SANDBOX,
};

describe('the container create request (12 envs of a 30 KB secret)', () => {
  let engine: Awaited<ReturnType<typeof recorder>>;
  let docker: Docker;

  beforeAll(async () => {
    engine = await recorder(({ method, url }) => {
      if (method === 'GET' && url.startsWith('/containers/json')) return { status: 200, body: [] };
      if (method === 'GET' && url.startsWith('/images/')) return { status: 200, body: { Id: 'sha256:1' } };
      if (method === 'POST' && url.startsWith('/containers/create'))
        return { status: 201, body: { Id: 'c1' } };
      return { status: 500, body: { message: 'not in the stand-in' } };
    });
    docker = new Docker({ host: '127.0.0.1', port: engine.port, protocol: 'http' });
  });
  afterEach(() => {
    engine.seen.length = 0;
  });
  afterAll(() => close(engine.server));

  it('as dockerode sends a spec given as it is: every option, the env too, also in the URL, refused with 431', async () => {
    // Node's server, as the engine's, refuses a request line and headers over its limit before any handler.
    await expect(
      docker.createContainer(containerSpec(workerSpec, specOptions) as Docker.ContainerCreateOptions),
    ).rejects.toMatchObject({ statusCode: 431 });
    expect(engine.seen).toEqual([]);
  });

  it('as Corral sends it: only the name in the URL, the env in the JSON body', async () => {
    const options = createContainerOptions(containerSpec(workerSpec, specOptions));
    await docker.createContainer(options as unknown as Docker.ContainerCreateOptions);
    const [request] = engine.seen;
    expect(request?.method).toBe('POST');
    expect(request?.url).toBe('/containers/create?name=corral-w-env');
    const body = JSON.parse(request?.body ?? '{}') as { Env: string[]; Image: string; name?: string };
    expect(body.Env.filter((e) => e.startsWith('CERT_'))).toHaveLength(12);
    expect(body.Env).toContain(`CERT_11=${SECRET}`);
    expect(body.Image).toBe('corral-test-worker:latest');
    expect(body.name).toBeUndefined();
  });

  it('DockerRuntime.create sends it so', async () => {
    const runtime = new DockerRuntime({
      docker,
      logger: pino({ level: 'silent' }),
      requestGpuDevices: false,
      sandbox: { ...DEFAULT_SANDBOX, networkIsolation: 'none', blockHost: false, storageNosuid: false },
    });
    // The stand-in cannot start a container: the create fails after its request was sent.
    await runtime.create(workerSpec).catch(() => undefined);
    const create = engine.seen.find((r) => r.url.startsWith('/containers/create'));
    expect(create?.url).toBe('/containers/create?name=corral-w-env');
    expect(create?.body).toContain(`CERT_0=${SECRET}`);
  });
});

describe('image names in the engine API path', () => {
  it.each([
    ['corral-test-worker:latest', 'corral-test-worker%3Alatest'],
    ['ghcr.io/org/app:1', 'ghcr%2Eio%2Forg%2Fapp%3A1'],
    ['../../../../127.0.0.1:1/x?y=', '%2E%2E%2F%2E%2E%2F%2E%2E%2F%2E%2E%2F127%2E0%2E0%2E1%3A1%2Fx%3Fy%3D'],
  ])('%s is one segment: %s', async (image, segment) => {
    expect(imagePathName(image)).toBe(segment);
    const engine = await recorder(() => ({ status: 404, body: { message: 'no such image' } }));
    try {
      const docker = new Docker({ host: '127.0.0.1', port: engine.port, protocol: 'http' });
      await expect(docker.getImage(imagePathName(image)).inspect()).rejects.toMatchObject({
        statusCode: 404,
      });
      expect(engine.seen.map((r) => r.url)).toEqual([`/images/${segment}/json`]);
    } finally {
      await close(engine.server);
    }
  });
});

describe('a redirect from the engine', () => {
  it('is never followed: its target receives nothing, the call fails with the reason, the process goes on', async () => {
    refuseEngineRedirects();
    const target = await recorder(() => ({ status: 200, body: {} }));
    const engine = await recorder(() => ({
      status: 301,
      headers: { location: `http://127.0.0.1:${target.port}/ssrf-probe?x=` },
    }));
    try {
      const docker = new Docker({ host: '127.0.0.1', port: engine.port, protocol: 'http' });
      const runtime = new DockerRuntime({ docker, logger: pino({ level: 'silent' }) });
      await expect(runtime.localImage('app:1')).rejects.toThrow(
        'cannot inspect image app:1: the engine answered with a redirect, which Corral never follows',
      );
      await expect(runtime.prepareImage({ image: 'app:1' })).rejects.toThrow(/never follows/);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(engine.seen).toHaveLength(2);
      expect(target.seen).toEqual([]);
    } finally {
      await close(engine.server);
      await close(target.server);
    }
  });
});
