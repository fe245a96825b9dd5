/** The image-state decisions, on plain data: when to pull, what a try leaves, how the endpoint's status reads. */
import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import type { Endpoint, EndpointState, StateReport } from '../../domain/endpoint.js';
import type { BackoffPolicy } from '../crashes/backoff.js';
import {
  type ImageState,
  imageKey,
  pullEnded,
  pullStarted,
  shouldPrepare,
  withImageStatus,
} from './image-state.js';
import type { ManagedWorker } from './managed-worker.js';

const policy: BackoffPolicy = { baseMs: 1000, capMs: 8000, crashLoopAfter: 5 };
const endpoint = (patch: Partial<Endpoint> = {}, ref = 'ghcr.io/team/app:1', authId = ''): Endpoint => {
  const base = sampleEndpoint({ patch: { image: { ref, authId } } });
  return { ...base, updatedAt: 100, ...patch };
};
const status = (state: EndpointState, message: string, error = ''): StateReport<EndpointState> => ({
  state,
  error,
  message,
});
const worker = (state: ManagedWorker['state'], healthy: boolean): ManagedWorker =>
  ({ id: 'w1', endpointId: 'e', revision: 1, state, healthy, message: '', createdAt: 0 }) as ManagedWorker;

describe('when an endpoint image is prepared', () => {
  const e = endpoint();
  const at = (phase: ImageState['phase'], patch: Partial<ImageState> = {}): ImageState => ({
    ...pullStarted(e, undefined),
    phase,
    ...patch,
  });
  it.each([
    { name: 'a new endpoint', endpoint: e, state: undefined, now: 0, prepare: true },
    {
      name: 'a stopped one: never',
      endpoint: endpoint({ desired: 'stopped' }),
      state: undefined,
      now: 0,
      prepare: false,
    },
    { name: 'one whose pull is under way', endpoint: e, state: at('pulling'), now: 0, prepare: false },
    { name: 'one whose image is ready', endpoint: e, state: at('ready'), now: 10_000, prepare: false },
    {
      name: 'a new image while the old one pulls',
      endpoint: endpoint({}, 'ghcr.io/team/app:2'),
      state: at('pulling'),
      now: 0,
      prepare: true,
    },
    {
      name: 'other credentials for a ready image',
      endpoint: endpoint({}, 'ghcr.io/team/app:1', 'auth-2'),
      state: at('ready'),
      now: 0,
      prepare: true,
    },
    {
      name: 'a failure before its retry',
      endpoint: e,
      state: at('failed', { retryAt: 500 }),
      now: 499,
      prepare: false,
    },
    {
      name: 'a failure at its retry',
      endpoint: e,
      state: at('failed', { retryAt: 500 }),
      now: 500,
      prepare: true,
    },
    {
      name: 'a transient failure at its retry',
      endpoint: e,
      state: at('retrying', { retryAt: 500 }),
      now: 500,
      prepare: true,
    },
    {
      name: "a failure after the owner's change (updatedAt), before its retry",
      endpoint: endpoint({ updatedAt: 200 }),
      state: at('failed', { retryAt: 500 }),
      now: 0,
      prepare: true,
    },
  ])('$name: $prepare', ({ endpoint, state, now, prepare }) => {
    expect(shouldPrepare(endpoint, state, now)).toBe(prepare);
  });

  it('the key is the owner, the credentials and the reference', () => {
    expect(imageKey(endpoint())).toBe(imageKey(endpoint()));
    expect(imageKey(endpoint())).not.toBe(imageKey(endpoint({ ownerId: 'owner-b' })));
    expect(imageKey(endpoint())).not.toBe(imageKey(endpoint({}, 'ghcr.io/team/app:1', 'auth-1')));
  });

  it('and how and where it is pulled: the pull policy, the products in any order (Kubernetes pulls onto their nodes)', () => {
    const on = (productIds: string[], pullPolicy?: 'Always') => {
      const base = endpoint();
      const image = { ...base.spec.image, ...(pullPolicy ? { pullPolicy } : {}) };
      return imageKey({ ...base, spec: { ...base.spec, productIds, image } });
    };
    expect(on(['h100', 'a100'])).toBe(on(['a100', 'h100']));
    expect(on(['h100'])).not.toBe(on(['a100']));
    expect(on(['h100'])).not.toBe(on(['h100'], 'Always'));
  });
});

describe('what a try leaves', () => {
  const e = endpoint();
  it('failed tries back off, doubling to the cap; a success forgets them; a new image starts afresh', () => {
    let state = pullStarted(e, undefined);
    const failure = { ok: false as const, code: 'IMAGE_PULL_FAILED' as const, message: 'manifest unknown' };
    state = pullEnded(state, failure, 1000, policy);
    expect(state).toMatchObject({ phase: 'failed', failures: 1, retryAt: 2000, message: 'manifest unknown' });
    for (let i = 0; i < 5; i++) state = pullEnded(pullStarted(e, state), failure, 1000, policy);
    expect(state).toMatchObject({ failures: 6, retryAt: 9000 });
    expect(pullStarted(endpoint({}, 'ghcr.io/team/app:2'), state).failures).toBe(0);
    expect(pullEnded(pullStarted(e, state), { ok: true }, 2000, policy)).toMatchObject({
      phase: 'ready',
      failures: 0,
      message: '',
      code: '',
    });
  });

  it('an engine that cannot be asked is retried, not the endpoint failing', () => {
    const state = pullEnded(
      pullStarted(e, undefined),
      { ok: false, code: 'UNAVAILABLE', message: 'cannot reach the Docker engine' },
      0,
      policy,
    );
    expect(state).toMatchObject({ phase: 'retrying', code: 'UNAVAILABLE', retryAt: 1000 });
  });
});

describe("the endpoint's status with its image", () => {
  const pulling = { phase: 'pulling' as const, message: '', progress: 'pulling app:1: 42% (120/285 MB)' };
  const failed = {
    phase: 'failed' as const,
    message: 'cannot pull image app:1: manifest unknown',
    progress: '',
  };
  const retrying = { phase: 'retrying' as const, message: 'cannot reach the Docker engine', progress: '' };
  it.each([
    {
      name: 'scaled to zero while pulling: deploying, with the progress',
      status: status('serving', 'scaled to zero; a request wakes it'),
      image: pulling,
      workers: [],
      expected: status('deploying', 'pulling app:1: 42% (120/285 MB)'),
    },
    {
      name: 'old workers serving while the new image pulls: their state, with the progress',
      status: status('updating', 'rolling out revision 2: 1 pulling'),
      image: pulling,
      workers: [worker('running', true)],
      expected: status('updating', 'rolling out revision 2: 1 pulling; pulling app:1: 42% (120/285 MB)'),
    },
    {
      name: 'an image that cannot be had: failed, with the reason',
      status: status('serving', 'scaled to zero; a request wakes it'),
      image: failed,
      workers: [],
      expected: status('failed', 'cannot pull image app:1: manifest unknown', 'IMAGE_PULL_FAILED'),
    },
    {
      name: 'an image that cannot be had while old workers serve: failed, serving meanwhile',
      status: status('updating', 'rolling out revision 2: 1 failed'),
      image: failed,
      workers: [worker('running', true)],
      expected: status(
        'failed',
        'cannot pull image app:1: manifest unknown; serving meanwhile: 1 running',
        'IMAGE_PULL_FAILED',
      ),
    },
    {
      name: 'a transient failure: deploying, saying it is tried again',
      status: status('deploying', 'waiting for workers'),
      image: retrying,
      workers: [],
      expected: status('deploying', 'cannot reach the Docker engine; trying again'),
    },
    {
      name: 'a ready image changes nothing',
      status: status('serving', 'scaled to zero; a request wakes it'),
      image: { ...pulling, phase: 'ready' as const },
      workers: [],
      expected: status('serving', 'scaled to zero; a request wakes it'),
    },
    {
      name: 'stopped stays stopped',
      status: status('stopped', 'stopped by its owner'),
      image: failed,
      workers: [],
      expected: status('stopped', 'stopped by its owner'),
    },
    {
      name: 'never placeable keeps its reason',
      status: status('failed', 'needs 4 GPUs', 'INSUFFICIENT_GPU'),
      image: failed,
      workers: [],
      expected: status('failed', 'needs 4 GPUs', 'INSUFFICIENT_GPU'),
    },
    {
      name: 'a crash loop keeps its reason while the image is pulled again',
      status: status('failed', '3 workers failed in a row', 'CRASH_LOOP'),
      image: pulling,
      workers: [],
      expected: status('failed', '3 workers failed in a row', 'CRASH_LOOP'),
    },
  ])('$name', ({ status, image, workers, expected }) => {
    expect(withImageStatus(status, image, workers)).toEqual(expected);
  });
});
