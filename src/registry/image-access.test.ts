/** Who may run an image: the plan of what to ask the registry, and the verdict from its answers. */
import { describe, expect, it } from 'vitest';
import {
  type AccessPlan,
  decideImageAccess,
  type LocalImage,
  type LocalImageAllowance,
  planAccessCheck,
} from './image-access.js';
import { formatReference } from './image-reference.js';
import type { ManifestResult } from './manifest-check.js';

const DIGEST = `sha256:${'b'.repeat(64)}`;
const PRIVATE = '127.0.0.1:5000/team-a/model:1';
const pulled: LocalImage = { id: 'sha256:1', repoDigests: [`127.0.0.1:5000/team-a/model@${DIGEST}`] };
const built: LocalImage = { id: 'sha256:2', repoDigests: [] };

const refs = (plan: AccessPlan) => (plan.kind === 'registry' ? plan.refs.map(formatReference) : plan.kind);

describe('planAccessCheck', () => {
  it.each([
    [
      'absent at create: ask for the reference',
      PRIVATE,
      undefined,
      'create',
      ['127.0.0.1:5000/team-a/model:1'],
    ],
    ['absent at a start: the pull decides', PRIVATE, undefined, 'start', 'pull-decides'],
    ['present, pulled from its own repository', PRIVATE, pulled, 'start', ['127.0.0.1:5000/team-a/model:1']],
    ['built here, never pulled', 'corral-test-worker:latest', built, 'create', 'local-only'],
    [
      'a local alias of a pulled image',
      'innocent:latest',
      pulled,
      'create',
      [`127.0.0.1:5000/team-a/model@${DIGEST}`],
    ],
    ['an image id of a pulled image', 'sha256:1', pulled, 'start', [`127.0.0.1:5000/team-a/model@${DIGEST}`]],
    ['not a reference', 'Not An Image', undefined, 'create', 'unparsable'],
  ] as const)('%s', (_, image, local, at, expected) => {
    expect(refs(planAccessCheck(image, local, at))).toEqual(expected);
  });

  it('credentials go only to the registry the endpoint names', () => {
    const plan = planAccessCheck('innocent:latest', pulled, 'create');
    expect(plan).toMatchObject({ kind: 'registry', loginRegistry: 'docker.io' });
  });
});

const found: ManifestResult = { kind: 'found', digest: DIGEST };
const anonymousRefused: ManifestResult = { kind: 'denied', status: 401, withLogin: false };
const loginRefused: ManifestResult = { kind: 'denied', status: 401, withLogin: true };
const missing: ManifestResult = { kind: 'not-found', detail: 'HTTP 404' };
const down: ManifestResult = { kind: 'unreachable', detail: 'http://127.0.0.1:5000: ECONNREFUSED' };

function decide(
  image: string,
  local: LocalImage | undefined,
  at: 'create' | 'start',
  results: ManifestResult[],
  admin = false,
  allowLocal: LocalImageAllowance = 'admins',
) {
  return decideImageAccess({
    image,
    plan: planAccessCheck(image, local, at),
    at,
    results,
    admin,
    allowLocal,
  });
}

describe('decideImageAccess', () => {
  it('an owner whose credentials the registry accepts may run the image', () => {
    expect(decide(PRIVATE, pulled, 'create', [found])).toEqual({ allowed: true, verified: true });
    expect(decide(PRIVATE, pulled, 'start', [found])).toEqual({ allowed: true, verified: true });
  });

  it('a public image (anonymous pull allowed) is for everyone', () => {
    expect(decide('nginx', undefined, 'create', [found])).toEqual({ allowed: true, verified: true });
  });

  it('without credentials a private image is refused, saying what to do', () => {
    const verdict = decide(PRIVATE, pulled, 'create', [anonymousRefused]);
    expect(verdict).toMatchObject({ allowed: false, cause: 'unauthorized' });
    expect(verdict.allowed || verdict.message).toMatch(
      /image 127.0.0.1:5000\/team-a\/model:1 is private: the registry refused an anonymous pull \(HTTP 401.*image.authId/,
    );
  });

  it('with credentials the registry refuses, the message says so', () => {
    const verdict = decide(PRIVATE, pulled, 'start', [loginRefused]);
    expect(verdict.allowed || verdict.message).toMatch(
      /^registry refused owner's credentials for image 127.0.0.1:5000\/team-a\/model:1 \(HTTP 401/,
    );
  });

  it('an alias reaches a pulled image only through the registry it came from', () => {
    expect(decide('innocent:latest', pulled, 'create', [anonymousRefused])).toMatchObject({ allowed: false });
  });

  it('an image the registry does not have is refused', () => {
    expect(decide('r.io/a/b:9', undefined, 'create', [missing])).toMatchObject({
      allowed: false,
      cause: 'not-found',
    });
  });

  it('an unreachable registry: accepted at create (unverified), refused at a start of a present image', () => {
    expect(decide(PRIVATE, undefined, 'create', [down])).toEqual({ allowed: true, verified: false });
    expect(decide(PRIVATE, pulled, 'create', [down])).toEqual({ allowed: true, verified: false });
    const verdict = decide(PRIVATE, pulled, 'start', [down]);
    expect(verdict).toMatchObject({ allowed: false, cause: 'unverifiable' });
    expect(verdict.allowed || verdict.message).toContain('ECONNREFUSED');
  });

  it('a refusal weighs more than an unreachable registry, and any grant more than both', () => {
    expect(
      decide('innocent', { id: 'x', repoDigests: [`a.io/x@${DIGEST}`, `b.io/y@${DIGEST}`] }, 'start', [
        down,
        anonymousRefused,
      ]),
    ).toMatchObject({ allowed: false, cause: 'unauthorized' });
    expect(
      decide('innocent', { id: 'x', repoDigests: [`a.io/x@${DIGEST}`, `b.io/y@${DIGEST}`] }, 'start', [
        anonymousRefused,
        found,
      ]),
    ).toMatchObject({ allowed: true });
  });

  it.each([
    ['admins', false, false],
    ['admins', true, true],
    ['all', false, true],
    [['corral-test-worker'], false, true],
    [['corral-test-worker:v2'], false, false],
    [['other'], false, false],
  ] as const)('a local-only image with allowance %j, admin %s: allowed %s', (allowLocal, admin, allowed) => {
    const verdict = decide('corral-test-worker:latest', built, 'create', [], admin, allowLocal);
    expect(verdict.allowed).toBe(allowed);
    if (!verdict.allowed) {
      expect(verdict.message).toBe(
        'image corral-test-worker:latest exists only on this server (built here, never pulled from a registry): ' +
          'only admins may run it unless the operator allows it (--allow-local-images)',
      );
    }
  });

  it("an absent image at a start is left to the pull, which uses only the owner's credentials", () => {
    expect(decide(PRIVATE, undefined, 'start', [])).toEqual({ allowed: true, verified: false });
  });
});
