/**
 * Images pulled when an endpoint is created or its image changes, before any request (issue 9, item 2): the
 * controller over the fake runtime on manual timers. An image that cannot be had fails a `minNum: 0` endpoint at
 * once, the pull's progress shows on the endpoint's state, workers started meanwhile wait for the one pull, and
 * an engine that cannot be asked is retried without failing the endpoint.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../../test/support/controller-harness.js';
import type { Endpoint } from '../../domain/endpoint.js';
import { RuntimeError } from '../../runtime/types.js';

const scaledToZero = { workers: { minWorkers: 0, maxWorkers: 2, gpusPerWorker: 1 } };

describe('the controller prepares each endpoint image before any worker needs it', () => {
  let h: ControllerHarness;
  afterEach(() => h.close());
  const status = async (endpoint: Endpoint) =>
    (await h.store.endpoints.get(endpoint.ownerId, endpoint.id))?.status;

  it('a minNum 0 endpoint whose image cannot be had is failed at once, without a request or a worker', async () => {
    h = await controllerHarness();
    h.runtime.failPull('ghcr.io/nobody/nothing:1');
    const endpoint = await h.create({ image: { ref: 'ghcr.io/nobody/nothing:1' }, ...scaledToZero });
    h.controller.start();
    await h.flush();
    expect(await status(endpoint)).toEqual({
      state: 'failed',
      error: 'IMAGE_PULL_FAILED',
      message: 'image ghcr.io/nobody/nothing:1 not found (fake)',
    });
    // The gateway refuses at once, naming the reason.
    expect(h.routes.conditionOf(endpoint.id)?.refusal).toMatchObject({
      kind: 'failed',
      reason: 'IMAGE_PULL_FAILED',
    });
    expect(h.runtime.counters.creates + h.runtime.counters.createFailures).toBe(0);
    expect(h.controller.workersOf(endpoint.id)).toEqual([]);
    expect(h.logs.filter((l) => l.message.startsWith('cannot prepare the image'))).toHaveLength(1);
  });

  it('a stored image that is not a reference fails its endpoint with the reason, never reaches the runtime, and the others serve', async () => {
    h = await controllerHarness();
    // Written to the store directly, as a row from before references were checked would be.
    const bad = await h.create({ image: { ref: '../../../etc/passwd' } });
    const good = await h.create({ appName: 'good' });
    h.controller.start();
    await h.flush();
    await h.eventually(async () => expect((await status(good))?.message).toBe('1 running'));
    expect(await status(bad)).toEqual({
      state: 'failed',
      error: 'IMAGE_PULL_FAILED',
      message:
        'image "../../../etc/passwd" is not an image reference (".." is not a registry host[:port]); ' +
        "update the endpoint's image",
    });
    // Only the good endpoint's image was prepared and only its worker created.
    expect(h.runtime.counters.prepares).toBe(1);
    expect(h.runtime.counters.creates).toBe(1);
  });

  it('the pull shows its progress on the endpoint state, and a scaled-to-zero endpoint serves once it is done', async () => {
    h = await controllerHarness();
    h.runtime.pullDelayMs = 5_000;
    const endpoint = await h.create({ image: { ref: 'ghcr.io/team/big:1' }, ...scaledToZero });
    h.controller.start();
    await h.flush();
    expect(await status(endpoint)).toEqual({
      state: 'deploying',
      error: '',
      message: 'preparing image ghcr.io/team/big:1',
    });
    // The next pass (the harness's 20 ms tick) shows what the runtime says of the pull.
    await h.timers.advanceSettling(20);
    await h.flush();
    expect((await status(endpoint))?.message).toBe('pulling ghcr.io/team/big:1: 0%');
    expect(h.routes.conditionOf(endpoint.id)?.waitingFor).toBe('pulling ghcr.io/team/big:1: 0%');
    await h.timers.advanceSettling(5_000);
    await h.flush();
    expect(await status(endpoint)).toMatchObject({
      state: 'serving',
      message: 'scaled to zero; a request wakes it',
    });
    expect(h.runtime.counters.pulls).toBe(1);
    // A worker started now needs no pull: the image is there.
    await h.update(endpoint, { workers: { minWorkers: 1 } });
    await h.eventually(async () => expect((await status(endpoint))?.message).toBe('1 running'));
    expect(h.runtime.counters.pulls).toBe(1);
  });

  it('workers started during the pull wait for it: one pull, their state its progress', async () => {
    h = await controllerHarness();
    h.runtime.pullDelayMs = 5_000;
    const endpoint = await h.create({ workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 1 } });
    h.controller.start();
    await h.flush();
    const waiting = h.controller.workersOf(endpoint.id);
    expect(waiting.map((w) => [w.state, w.message])).toEqual([
      ['pulling', 'pulling corral/test-worker:latest: 0%'],
      ['pulling', 'pulling corral/test-worker:latest: 0%'],
    ]);
    expect(h.runtime.counters.creates).toBe(0);
    await h.timers.advanceSettling(5_000);
    await h.eventually(async () => expect((await status(endpoint))?.message).toBe('2 running'));
    expect(h.runtime.counters.pulls).toBe(1);
    expect(h.runtime.counters.prepares).toBe(1);
  });

  it("workers of a runtime whose create pulls where it runs (kubernetes) start at once, the endpoint's pull going on beside them", async () => {
    h = await controllerHarness();
    h.runtime.pullDelayMs = 5_000;
    h.runtime.createPullsWhereItRuns = true;
    const endpoint = await h.create({ workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 1 } });
    h.controller.start();
    await h.flush();
    // Both created before the endpoint's pull has ended, each pulling where it runs.
    expect(h.runtime.counters.creates).toBe(2);
    expect(h.runtime.counters.prepares).toBe(1);
    await h.timers.advanceSettling(5_000);
    await h.eventually(async () => expect((await status(endpoint))?.message).toBe('2 running'));
  });

  it('an engine that cannot be asked is retried with backoff, and the endpoint is not failed meanwhile', async () => {
    h = await controllerHarness();
    const prepare = vi
      .spyOn(h.runtime, 'prepareImage')
      .mockRejectedValueOnce(new RuntimeError('UNAVAILABLE', 'cannot reach the fake engine: gone'));
    const endpoint = await h.create(scaledToZero);
    h.controller.start();
    await h.flush();
    expect(await status(endpoint)).toEqual({
      state: 'deploying',
      error: '',
      message: 'cannot reach the fake engine: gone; trying again',
    });
    // The harness's backoff: 10 ms, then the next pass tries again.
    await h.eventually(async () => expect((await status(endpoint))?.state).toBe('serving'));
    expect(prepare).toHaveBeenCalledTimes(2);
  });

  it('an image that cannot be had is tried again with backoff, and the endpoint serves once it can be had', async () => {
    h = await controllerHarness();
    h.runtime.failPull('ghcr.io/team/late:1');
    const endpoint = await h.create({ image: { ref: 'ghcr.io/team/late:1' }, ...scaledToZero });
    h.controller.start();
    await h.flush();
    expect((await status(endpoint))?.error).toBe('IMAGE_PULL_FAILED');
    for (let waited = 0; waited < 200; waited += 5) {
      await h.timers.advanceSettling(5);
      await h.flush();
    }
    const tries = h.runtime.counters.prepares;
    // 10, 20, 40, 50, 50 ms apart: a handful in 200 ms, not one a pass.
    expect(tries).toBeGreaterThanOrEqual(4);
    expect(tries).toBeLessThanOrEqual(7);
    h.runtime.clearFailures();
    await h.eventually(async () => expect((await status(endpoint))?.state).toBe('serving'));
  });

  it('a new image that cannot be had fails the endpoint while the old workers keep serving', async () => {
    h = await controllerHarness();
    const endpoint = await h.create({ workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } });
    h.controller.start();
    await h.eventually(async () => expect((await status(endpoint))?.state).toBe('serving'));
    const [old] = h.routes.routableWorkers(endpoint.id);
    expect(old).toBeDefined();
    h.runtime.failPull('ghcr.io/team/app:2');
    await h.update(endpoint, { image: { ref: 'ghcr.io/team/app:2' } }, true);
    await h.eventually(async () =>
      expect(await status(endpoint)).toMatchObject({
        state: 'failed',
        error: 'IMAGE_PULL_FAILED',
        message: 'image ghcr.io/team/app:2 not found (fake); serving meanwhile: 1 running',
      }),
    );
    expect(h.routes.routableWorkers(endpoint.id).map((w) => w.id)).toEqual([old?.id]);
  });

  it("a private image the owner may not run fails the endpoint at create with the check's reason", async () => {
    const message =
      'image 127.0.0.1:5000/a/model:1 is private: the registry refused an anonymous pull (HTTP 401)';
    const asked: string[] = [];
    h = await controllerHarness({
      imageAccess: async (request) => {
        asked.push(`${request.ownerId} ${request.authId} ${request.image}`);
        return { allowed: false, message };
      },
    });
    const endpoint = await h.create({
      image: { ref: '127.0.0.1:5000/a/model:1', authId: 'auth-b' },
      ...scaledToZero,
    });
    h.controller.start();
    await h.flush();
    expect(await status(endpoint)).toEqual({ state: 'failed', error: 'IMAGE_PULL_FAILED', message });
    expect(asked).toEqual([`owner-a auth-b 127.0.0.1:5000/a/model:1`]);
    expect(h.runtime.counters.prepares).toBe(0);
  });

  it('the runtime is told whose image it is and how its workers pull it: owner, credential, products, pull policy', async () => {
    h = await controllerHarness();
    const prepare = vi.spyOn(h.runtime, 'prepareImage');
    const endpoint = await h.create({
      image: { ref: 'registry.example.com/team/app:latest', pullPolicy: 'Never' },
    });
    h.controller.start();
    await h.eventually(async () => expect((await status(endpoint))?.message).toBe('1 running'));
    expect(prepare).toHaveBeenCalledTimes(1);
    expect(prepare.mock.calls[0]?.[0]).toEqual({
      image: 'registry.example.com/team/app:latest',
      endpoint: {
        ownerId: endpoint.ownerId,
        authId: '',
        productIds: endpoint.spec.productIds,
        pullPolicy: 'Never',
        latestTag: true,
      },
    });
  });

  it('registry credentials are revealed for the pull only, once', async () => {
    const reveal = vi.fn(async () => ({ username: 'bob', password: 's3cret' }));
    h = await controllerHarness({ revealCredentials: reveal });
    h.runtime.pullDelayMs = 10;
    const endpoint = await h.create({
      image: { ref: 'registry.example.com/team/app:1', authId: 'cred-1' },
      workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 1 },
    });
    h.controller.start();
    await h.eventually(async () => expect((await status(endpoint))?.message).toBe('2 running'));
    expect(reveal).toHaveBeenCalledTimes(1);
    expect(reveal).toHaveBeenCalledWith('owner-a', 'cred-1');
  });
});
