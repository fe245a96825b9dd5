/**
 * The manifest check over real HTTP against a small registry stand-in on 127.0.0.1 that answers as distribution
 * does: Basic challenges (htpasswd), or Bearer challenges with a token endpoint (Docker Hub, ghcr.io).
 */
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseImageReference } from './image-reference.js';
import { MANIFEST_ACCEPT, registryManifestCheck } from './manifest-check.js';
import { RegistryGuard } from './registry-guard.js';

const DIGEST = `sha256:${'c'.repeat(64)}`;
const GOOD = `Basic ${Buffer.from('alice:right').toString('base64')}`;

interface Seen {
  method: string;
  url: string;
  authorization?: string;
  accept?: string;
}

/** Repositories: `pub/*` anonymous, `priv/*` alice only; tag `missing` does not exist. */
function registry(scheme: 'basic' | 'bearer', seen: Seen[]): Server {
  return createServer((req: IncomingMessage, res) => {
    const url = new URL(req.url ?? '/', 'http://x');
    seen.push({
      method: req.method ?? '',
      url: req.url ?? '',
      authorization: req.headers.authorization,
      accept: req.headers.accept,
    });
    const host = req.headers.host;
    if (url.pathname === '/token') {
      if (req.headers.authorization && req.headers.authorization !== GOOD) return res.writeHead(401).end();
      const who = req.headers.authorization ? 'alice' : 'anonymous';
      return res
        .writeHead(200, { 'content-type': 'application/json' })
        .end(JSON.stringify({ token: `t-${who}-${url.searchParams.get('scope')}` }));
    }
    const match = /^\/v2\/(.+)\/manifests\/(.+)$/.exec(url.pathname);
    if (!match) return res.writeHead(404).end();
    const [, repository, reference] = match;
    const auth = req.headers.authorization;
    const allowed = repository?.startsWith('pub/')
      ? scheme === 'basic' || auth !== undefined
      : auth === GOOD || auth === `Bearer t-alice-repository:${repository}:pull`;
    if (!allowed) {
      const challenge =
        scheme === 'basic'
          ? 'Basic realm="Registry Realm"'
          : `Bearer realm="http://${host}/token",service="test-registry",scope="repository:${repository}:pull"`;
      return res.writeHead(401, { 'www-authenticate': challenge }).end();
    }
    if (reference === 'missing') return res.writeHead(404).end();
    res
      .writeHead(200, {
        'docker-content-digest': DIGEST,
        'content-type': 'application/vnd.oci.image.manifest.v1+json',
      })
      .end();
  });
}

async function listening(server: Server): Promise<string> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return `127.0.0.1:${(server.address() as AddressInfo).port}`;
}

// The stand-ins listen on loopback, which only a listed registry may be.
const check = registryManifestCheck({
  timeoutMs: 2000,
  guard: new RegistryGuard({ allowPrivate: ['127.0.0.1'] }),
});
const ref = (host: string, path: string) => {
  const parsed = parseImageReference(`${host}/${path}`);
  if (!parsed) throw new Error(path);
  return parsed;
};

describe.each(['basic', 'bearer'] as const)('a registry with %s challenges', (scheme) => {
  const seen: Seen[] = [];
  const server = registry(scheme, seen);
  let host: string;
  beforeAll(async () => {
    host = await listening(server);
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it('a public image is found anonymously', async () => {
    expect(await check(ref(host, 'pub/app:1'))).toEqual({ kind: 'found', digest: DIGEST });
  });

  it('a private image is refused without credentials', async () => {
    expect(await check(ref(host, 'priv/app:1'))).toEqual({ kind: 'denied', status: 401, withLogin: false });
  });

  it('a private image is refused with wrong credentials', async () => {
    expect(await check(ref(host, 'priv/app:1'), { username: 'alice', password: 'wrong' })).toEqual({
      kind: 'denied',
      status: 401,
      withLogin: true,
    });
  });

  it('a private image is found with the right credentials, by HEAD with the manifest types accepted', async () => {
    seen.length = 0;
    expect(await check(ref(host, 'priv/app:1'), { username: 'alice', password: 'right' })).toMatchObject({
      kind: 'found',
    });
    const heads = seen.filter((s) => s.method === 'HEAD');
    expect(heads.map((s) => s.url)).toEqual(['/v2/priv/app/manifests/1', '/v2/priv/app/manifests/1']);
    expect(heads.every((s) => s.accept === MANIFEST_ACCEPT)).toBe(true);
    expect(seen.some((s) => s.method === 'GET' && s.url.startsWith('/v2/'))).toBe(false);
  });

  it('a digest is asked for by digest', async () => {
    seen.length = 0;
    await check(ref(host, `priv/app@${DIGEST}`), { username: 'alice', password: 'right' });
    expect(seen[0]?.url).toBe(`/v2/priv/app/manifests/${DIGEST}`);
  });

  it('a missing tag is not-found', async () => {
    expect(
      await check(ref(host, 'priv/app:missing'), { username: 'alice', password: 'right' }),
    ).toMatchObject({
      kind: 'not-found',
    });
  });
});

describe('a registry that does not answer', () => {
  it('is unreachable, with the cause', async () => {
    const server = createServer();
    const host = await listening(server);
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const result = await check(ref(host, 'priv/app:1'));
    expect(result).toMatchObject({ kind: 'unreachable' });
    expect(result.kind === 'unreachable' && result.detail).toContain('ECONNREFUSED');
  });

  it('a 5xx says nothing about access', async () => {
    const server = createServer((_, res) => res.writeHead(503).end());
    const host = await listening(server);
    try {
      expect(await check(ref(host, 'pub/app:1'))).toEqual({
        kind: 'unreachable',
        detail: 'the registry answered HTTP 503',
      });
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
