/** The guard's I/O around the verdict: whose login goes where, grants reused briefly, the engine failing. */
import { describe, expect, it } from 'vitest';
import type { LocalImage } from './image-access.js';
import { ImageAccessGuard, type ImageAccessGuardOptions } from './image-access-guard.js';
import { formatReference } from './image-reference.js';
import type { ManifestResult, RegistryLogin } from './manifest-check.js';
import { RegistryGuard } from './registry-guard.js';

const DIGEST = `sha256:${'d'.repeat(64)}`;
const PRIVATE = '127.0.0.1:5000/a/model:1';

function setup(overrides: Partial<ImageAccessGuardOptions> = {}, images: Record<string, LocalImage> = {}) {
  let now = 1_000;
  const asked: { ref: string; login?: RegistryLogin }[] = [];
  const guard = new ImageAccessGuard({
    localImage: async (image) => images[image],
    // alice's password pulls everything on 127.0.0.1:5000; anonymous pulls nothing there.
    checkManifest: async (ref, login): Promise<ManifestResult> => {
      asked.push({ ref: formatReference(ref), ...(login ? { login } : {}) });
      return login?.password === 'right'
        ? { kind: 'found' }
        : { kind: 'denied', status: 401, withLogin: !!login };
    },
    login: async (ownerId, authId) =>
      ownerId === 'alice' && authId === 'auth-a' ? { username: 'alice', password: 'right' } : undefined,
    allowLocal: 'admins',
    clock: () => now,
    registries: new RegistryGuard({ allowPrivate: ['127.0.0.1:5000'] }),
    ...overrides,
  });
  return { guard, asked, advance: (ms: number) => (now += ms) };
}

const pulled: LocalImage = { id: 'img-1', repoDigests: [`127.0.0.1:5000/a/model@${DIGEST}`] };

describe('ImageAccessGuard', () => {
  it("asks the registry with the owner's own login, and reuses a grant for 60 s", async () => {
    const { guard, asked, advance } = setup({}, { [PRIVATE]: pulled });
    const alice = { ownerId: 'alice', authId: 'auth-a', image: PRIVATE, at: 'start' as const, admin: false };
    expect(await guard.check(alice)).toEqual({ allowed: true, verified: true });
    expect(await guard.check(alice)).toEqual({ allowed: true, verified: true });
    expect(asked).toHaveLength(1);
    expect(asked[0]?.login?.username).toBe('alice');
    advance(60_000);
    await guard.check(alice);
    expect(asked).toHaveLength(2);
  });

  it("a grant is the owner's: another owner is asked for afresh and refused", async () => {
    const { guard } = setup({}, { [PRIVATE]: pulled });
    await guard.check({ ownerId: 'alice', authId: 'auth-a', image: PRIVATE, at: 'create', admin: false });
    const bob = await guard.check({ ownerId: 'bob', authId: '', image: PRIVATE, at: 'create', admin: true });
    expect(bob).toMatchObject({ allowed: false, cause: 'unauthorized' });
  });

  it('credentials are not sent to a registry the endpoint does not name', async () => {
    const { guard, asked } = setup({}, { 'alias:latest': pulled });
    const verdict = await guard.check({
      ownerId: 'alice',
      authId: 'auth-a',
      image: 'alias:latest',
      at: 'create',
      admin: false,
    });
    expect(asked).toEqual([{ ref: `127.0.0.1:5000/a/model@${DIGEST}` }]);
    expect(verdict).toMatchObject({ allowed: false, cause: 'unauthorized' });
  });

  it('asks whether the owner is an admin only for a local-only image', async () => {
    let askedAdmin = 0;
    const admin = async () => {
      askedAdmin += 1;
      return true;
    };
    const { guard } = setup({}, { [PRIVATE]: pulled, 'built:1': { id: 'img-2', repoDigests: [] } });
    await guard.check({ ownerId: 'alice', authId: 'auth-a', image: PRIVATE, at: 'start', admin });
    expect(askedAdmin).toBe(0);
    expect(
      await guard.check({ ownerId: 'alice', authId: '', image: 'built:1', at: 'start', admin }),
    ).toMatchObject({ allowed: true });
    expect(askedAdmin).toBe(1);
  });

  it('an engine that cannot say what it has refuses a start and lets the registry decide a create', async () => {
    const { guard } = setup({
      localImage: async () => {
        throw new Error('connect ENOENT /var/run/docker.sock');
      },
    });
    const request = { ownerId: 'alice', authId: 'auth-a', image: PRIVATE, admin: false };
    expect(await guard.check({ ...request, at: 'start' })).toEqual({
      allowed: false,
      cause: 'unverifiable',
      message: `cannot inspect image ${PRIVATE} before the start: connect ENOENT /var/run/docker.sock`,
    });
    expect(await guard.check({ ...request, at: 'create' })).toEqual({ allowed: true, verified: true });
  });
});
