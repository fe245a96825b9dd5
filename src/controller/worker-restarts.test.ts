import { afterEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import type { SpecPatch } from '../domain/spec-patch.js';
import { simulatedInventory } from '../gpu/inventory.js';

describe('the controller over the fake runtime: containers that restart, pause or stay unhealthy', () => {
  let h: ControllerHarness;
  afterEach(async () => {
    await h?.close();
  });

  const oneWorker = { workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } };
  const routed = (endpointId: string) =>
    h.routes.routableWorkers(endpointId).map((w) => `${w.id}@${w.address.port}`);
  /** A controller started over a one-worker endpoint, once its worker is routed: the endpoint, its worker, its port. */
  const servingOne = async (
    options: Parameters<typeof controllerHarness>[0] = {},
    patch: SpecPatch = {},
    beforeStart = () => {},
  ) => {
    h = await controllerHarness(options);
    const endpoint = await h.create({ ...oneWorker, ...patch });
    beforeStart();
    h.controller.start();
    await h.eventually(() => expect(routed(endpoint.id)).toHaveLength(1));
    const [worker] = h.controller.workers();
    return { endpoint, id: worker?.id ?? '', port: worker?.address?.port ?? 0 };
  };

  it('a restarted container leaves routing at once and is routed again at its new port: the same worker, no replacement', async () => {
    const { endpoint, id, port: before } = await servingOne();
    let routedDuring: string[] | undefined;
    h.routes.onChange(() => {
      routedDuring ??= routed(endpoint.id);
    });
    h.runtime.restart(id);
    // Its exit took it out of routing before anything else ran.
    expect(routedDuring).toEqual([]);
    await h.eventually(() => expect(routed(endpoint.id)).toEqual([`${id}@${before + 1}`]));
    expect(h.controller.workers().map((w) => [w.id, w.state])).toEqual([[id, 'running']]);
    expect((await h.store.workers.listByEndpoint(endpoint.id))[0]?.address?.port).toBe(before + 1);
    expect(h.logs).toContainEqual(
      expect.objectContaining({
        message: expect.stringMatching(/: worker \S+ container moved$/),
        level: 'info',
      }),
    );
  });

  it('a container its engine stopped that starts again within the restart grace keeps its worker; one that stays exited dies after it', async () => {
    const { endpoint, id, port: before } = await servingOne({ restartGraceMs: 2_000 });
    // docker restart: the container is listed exited for a moment before it starts again.
    h.runtime.stopByEngine(id);
    h.runtime.exit(id, 0);
    await h.timers.advanceSettling(1_500);
    await h.flush();
    expect(h.controller.workers().map((w) => [w.id, w.state])).toEqual([[id, 'unhealthy']]);
    expect(h.controller.workers()[0]?.message).toBe('its container stopped (exit code 0)');
    h.runtime.restart(id);
    await h.eventually(() => expect(routed(endpoint.id)).toEqual([`${id}@${before + 1}`]));
    expect(h.controller.workers().map((w) => w.id)).toEqual([id]);

    // This time (docker stop) it stays exited: dead once the grace is over, and replaced.
    h.runtime.stopByEngine(id);
    h.runtime.exit(id, 3);
    const exitedAt = h.timers.now;
    await h.eventually(() => expect(h.controller.workers().find((w) => w.id === id)?.state).toBe('failed'));
    expect(h.timers.now - exitedAt).toBeGreaterThanOrEqual(2_000);
    await h.eventually(() => expect(routed(endpoint.id)).toHaveLength(1));
    expect(routed(endpoint.id)[0]).not.toContain(id);
  });

  it('a container that crashes (no stop by its engine before) is dead at the next pass, with no grace', async () => {
    const { endpoint, id } = await servingOne({ restartGraceMs: 2_000 });
    let routedDuring: string[] | undefined;
    let stateDuring: string | undefined;
    h.routes.onChange(() => {
      routedDuring ??= routed(endpoint.id);
      stateDuring ??= h.controller.workers().find((w) => w.id === id)?.state;
    });
    h.runtime.exit(id, 1);
    // Out of routing at once; its state is the pass's, which records the death with it (no 'unhealthy' between,
    // which the endpoint's state would show as a change: serving, deploying, serving at each crash).
    expect(routedDuring).toEqual([]);
    expect(stateDuring).toBe('running');
    await h.flush();
    expect(h.controller.workers().find((w) => w.id === id)?.state).toBe('failed');
  });

  it('a restart whose events were lost is picked up by the next pass from the listing', async () => {
    // No event reaches the controller: only its passes' listings say what happened.
    const {
      endpoint,
      id,
      port: before,
    } = await servingOne({}, {}, () => {
      h.runtime.watch = () => () => {};
    });
    h.runtime.restart(id);
    await h.eventually(() => expect(routed(endpoint.id)).toEqual([`${id}@${before + 1}`]));
    expect(h.controller.workers()).toHaveLength(1);
  });

  it('a paused container leaves routing at once and comes back when resumed', async () => {
    const { endpoint, id, port } = await servingOne();
    // Paused, its app answers nothing: the probes see what a frozen process gives, here a failure.
    h.unhealthyPorts.add(port);
    h.runtime.pause(id);
    expect(routed(endpoint.id)).toEqual([]);
    expect(h.controller.workers()[0]).toMatchObject({
      state: 'unhealthy',
      message: 'its container is paused',
    });
    // Probes that fail while it is paused do not put it back.
    await h.timers.advanceSettling(2_000);
    await h.flush();
    expect(routed(endpoint.id)).toEqual([]);

    h.unhealthyPorts.clear();
    h.runtime.pause(id, false);
    await h.eventually(() => expect(routed(endpoint.id)).toHaveLength(1));
    expect(h.controller.workers().map((w) => w.id)).toEqual([id]);
  });

  it('a worker unhealthy past unhealthyTimeoutMs is failed UNHEALTHY, and its replacement gets the GPU it freed', async () => {
    const gpus = simulatedInventory([{ productId: 'h100-80g', count: 1, cudaVersion: '12.4' }]);
    const gpu = gpus[0]?.uuid ?? '';
    const {
      endpoint,
      id: stuckId,
      port,
    } = await servingOne(
      { gpus, unhealthyTimeoutMs: 3_000 },
      { health: { periodSeconds: 1, failureThreshold: 2 } },
    );
    h.unhealthyPorts.add(port);
    await h.eventually(() => expect(h.controller.workers()[0]?.state).toBe('unhealthy'));
    const unhealthyAt = h.timers.now;

    // Short of the limit it keeps its GPU: nothing else could have it.
    await h.timers.advanceSettling(2_500);
    await h.flush();
    expect(h.controller.workers().map((w) => [w.id, w.state])).toEqual([[stuckId, 'unhealthy']]);
    expect([...h.controller.heldGpus()]).toEqual([[gpu, stuckId]]);

    await h.eventually(async () => {
      const rows = await h.store.workers.listByEndpoint(endpoint.id);
      const failed = rows.find((w) => w.id === stuckId);
      expect(failed?.status).toEqual({
        state: 'failed',
        error: 'UNHEALTHY',
        message: 'unhealthy for more than 3 s after it had served; last probe: HTTP 503 from /health',
      });
      expect(failed?.gpuUuids).toEqual([]);
      const replacement = rows.find((w) => w.id !== stuckId);
      expect(replacement?.status.state).toBe('running');
      expect(replacement?.gpuUuids).toEqual([gpu]);
    });
    expect(h.timers.now - unhealthyAt).toBeGreaterThan(3_000);
    expect(await h.runtime.inspect(stuckId)).toBeUndefined();
    expect([...h.controller.heldGpus().values()]).not.toContain(stuckId);
  });
});
