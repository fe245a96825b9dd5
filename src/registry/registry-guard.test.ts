/**
 * Registries on private addresses (issue 29, item 7), over real sockets: an image that names one, in any form, is
 * refused before any connection (a listening socket sees none), the answer is the same whatever listens, a token
 * endpoint is held to the same rule, a listed registry is spoken to, and no registry's answer body reaches a verdict.
 */
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { systemLookupAll } from '../net/resolve.js';
import { ImageAccessGuard } from './image-access-guard.js';
import { registryManifestCheck } from './manifest-check.js';
import { RegistryGuard } from './registry-guard.js';

const SECRET = 'secret-TOKEN-abc123';
const DIGEST = `sha256:${'e'.repeat(64)}`;
const opened: (Server | HttpServer)[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A socket on `host` that counts the connections it is offered (and answers none). */
async function countingSocket(
  host = '127.0.0.1',
  port = 0,
): Promise<{ port: number; connections: () => number }> {
  let connections = 0;
  const server = createServer((socket) => {
    connections += 1;
    socket.destroy();
  });
  opened.push(server);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, resolve);
  });
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, connections: () => connections };
}

/** An HTTP registry stand-in on 127.0.0.1; `answer` writes each answer. */
async function registry(
  answer: (path: string, host: string, res: import('node:http').ServerResponse) => void,
): Promise<{ port: number; requests: string[] }> {
  const requests: string[] = [];
  const server = createHttpServer((req, res) => {
    requests.push(`${req.method} ${req.url}`);
    answer(req.url ?? '/', req.headers.host ?? '', res);
  });
  opened.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  return { port: typeof address === 'object' && address ? address.port : 0, requests };
}

/** `pulled`: images present on the engine, pulled from where they name (a start asks that registry then). */
function accessGuard(allowPrivate: string[], pulled: string[] = []) {
  // `rebind.example` is a name whose DNS answer is loopback; every other name resolves as the system does.
  const registries = new RegistryGuard({
    allowPrivate,
    lookupAll: async (name) =>
      name === 'rebind.example'
        ? [{ address: '127.0.0.1', family: 4 }]
        : name === 'nowhere.example'
          ? Promise.reject(new Error('ENOTFOUND'))
          : systemLookupAll(name),
  });
  return new ImageAccessGuard({
    localImage: async (image) =>
      pulled.includes(image)
        ? { id: `id-${image}`, repoDigests: [`${image.replace(/:[^:/]+$/, '')}@${DIGEST}`] }
        : undefined,
    checkManifest: registryManifestCheck({ guard: registries, timeoutMs: 2000 }),
    registries,
    login: async () => undefined,
    allowLocal: 'admins',
    clock: () => 0,
  });
}

const ask = (guard: ImageAccessGuard, image: string, at: 'create' | 'start') =>
  guard.check({ ownerId: 'mallory', authId: '', image, at, admin: false });

describe('registries on private addresses', () => {
  it.each([
    '127.0.0.1:{port}',
    '2130706433:{port}',
    '0x7f000001:{port}',
    '0x7f.1:{port}',
    '0177.0.0.1:{port}',
    '127.1:{port}',
    '017700000001:{port}',
    'localhost:{port}',
    'LOCALHOST:{port}',
    '[::ffff:7f00:1]:{port}',
    'rebind.example:{port}',
  ])('%s is refused at create and before a pull, and nothing connects to it', async (written) => {
    const socket = await countingSocket();
    const image = `${written.replace('{port}', String(socket.port))}/x:1`;
    const guard = accessGuard([]);
    for (const at of ['create', 'start'] as const) {
      const verdict = await ask(guard, image, at);
      expect(verdict).toMatchObject({ allowed: false, cause: 'private-registry' });
      expect(verdict.allowed === false && verdict.message).toContain('registries.allowPrivate');
    }
    expect(socket.connections()).toBe(0);
  });

  it('[::1] is refused and nothing connects to it', async () => {
    const socket = await countingSocket('::1').catch(() => undefined);
    if (!socket) return; // no IPv6 loopback on this machine
    const verdict = await ask(accessGuard([]), `[::1]:${socket.port}/x:1`, 'create');
    expect(verdict).toMatchObject({ allowed: false, cause: 'private-registry' });
    expect(socket.connections()).toBe(0);
  });

  it('a name with no address is unreachable, not refused: accepted at create, the pull says what it finds', async () => {
    const guard = accessGuard([]);
    expect(await ask(guard, 'nowhere.example/x:1', 'create')).toEqual({ allowed: true, verified: false });
    expect(await ask(guard, 'nowhere.example/x:1', 'start')).toEqual({ allowed: true, verified: false });
  });

  it('answers the same whatever listens there (no port scanner)', async () => {
    const listening = await registry((_path, _host, res) => res.writeHead(404).end(SECRET));
    const image = `127.0.0.1:${listening.port}/x:1`;
    const withListener = await ask(accessGuard([]), image, 'create');
    await Promise.all(opened.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
    const withNothing = await ask(accessGuard([]), image, 'create');
    expect(withListener).toEqual(withNothing);
    expect(listening.requests).toEqual([]);
  });

  it('a listed registry is spoken to, by host:port or by host alone', async () => {
    const listed = await registry((_path, _host, res) => res.writeHead(404).end());
    const image = `127.0.0.1:${listed.port}/x:1`;
    for (const entry of [`127.0.0.1:${listed.port}`, '127.0.0.1']) {
      expect(await ask(accessGuard([entry]), image, 'create')).toMatchObject({
        allowed: false,
        cause: 'not-found',
      });
    }
    expect(listed.requests).toHaveLength(2);
    // Another port of a listed host:port is not listed.
    expect(await ask(accessGuard([`127.0.0.1:${listed.port + 1}`]), image, 'create')).toMatchObject({
      cause: 'private-registry',
    });
    expect(listed.requests).toHaveLength(2);
  });

  it("a listed registry's token endpoint on an unlisted private address is not asked", async () => {
    const tokens = await countingSocket();
    const listed = await registry((_path, _host, res) =>
      res
        .writeHead(401, {
          'www-authenticate': `Bearer realm="http://127.0.0.1:${tokens.port}/token",service="r"`,
        })
        .end(),
    );
    const verdict = await ask(
      accessGuard([`127.0.0.1:${listed.port}`]),
      `127.0.0.1:${listed.port}/x:1`,
      'create',
    );
    expect(verdict).toMatchObject({ allowed: false, cause: 'private-registry' });
    expect(tokens.connections()).toBe(0);
  });

  it("no registry's answer body reaches a verdict", async () => {
    // A registry whose token endpoint answers a secret-looking text, and one that answers it with a 418.
    const talkative = await registry((path, host, res) => {
      if (path.startsWith('/token')) return res.writeHead(200).end(SECRET);
      res.writeHead(401, { 'www-authenticate': `Bearer realm="http://${host}/token"` }).end(SECRET);
    });
    const teapot = await registry((_path, _host, res) => res.writeHead(418).end(SECRET));
    const images = [talkative.port, teapot.port].map((port) => `127.0.0.1:${port}/x:1`);
    // Present on the engine: a start asks the registry, and says why it could not tell.
    const guard = accessGuard(['127.0.0.1'], images);
    const verdicts = [];
    for (const image of images) {
      for (const at of ['create', 'start'] as const) verdicts.push(await ask(guard, image, at));
    }
    expect(talkative.requests.some((r) => r.startsWith('GET /token'))).toBe(true);
    expect(verdicts[1]).toMatchObject({ allowed: false, cause: 'unverifiable' });
    expect(verdicts[3]).toMatchObject({ allowed: false, cause: 'unverifiable' });
    expect(JSON.stringify(verdicts)).toContain('the token endpoint gave no token');
    expect(JSON.stringify(verdicts)).toContain('the registry answered HTTP 418');
    expect(JSON.stringify(verdicts)).not.toContain(SECRET);
  });
});
