/**
 * The controller's work queue in use: after the first whole pass, what changes one endpoint (a create that
 * finished, a probe's result, a crash, a GPU freed) reconciles that endpoint alone, listing its workers only and
 * reading its row only; a GPU it frees still starts another endpoint's waiting worker.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../test/support/controller-harness.js';
import { deleteEndpoint } from '../../test/support/fixtures.js';
import { LABELS } from '../runtime/types.js';

/** No resync during the test: every reconcile after the first pass is one an endpoint's change asked for. */
const NO_RESYNC = { intervalMs: 3_600_000 };

describe('the controller reconciles one endpoint per change', () => {
  let h: ControllerHarness;
  afterEach(() => h.close());

  /** Who listed the runtime since the spies were made: the whole runtime, or which endpoints. */
  function spies() {
    const list = vi.spyOn(h.runtime, 'list');
    const liveVersions = vi.spyOn(h.store.endpoints, 'liveVersions');
    const getMany = vi.spyOn(h.store.endpoints, 'getMany');
    return {
      wholeListings: () => list.mock.calls.filter(([s]) => s[LABELS.endpoint] === undefined).length,
      endpointsListed: () => new Set(list.mock.calls.map(([s]) => s[LABELS.endpoint]).filter((id) => id)),
      wholeReads: () => liveVersions.mock.calls.length,
      rowsRead: () => new Set(getMany.mock.calls.flatMap(([ids]) => ids)),
    };
  }

  /** Two endpoints of one worker each, started and routable after the first whole pass and their reconciles. */
  async function servingTwo(first: string, second: string) {
    h = await controllerHarness(NO_RESYNC);
    const two = [await h.create({ appName: first }), await h.create({ appName: second })] as const;
    h.controller.start();
    await h.eventually(() => {
      for (const endpoint of two) expect(h.routes.routableWorkers(endpoint.id)).toHaveLength(1);
    });
    return two;
  }

  it('starts a new endpoint worker by its own reconciles: create, probe, report, without a whole pass', async () => {
    h = await controllerHarness(NO_RESYNC);
    const quiet = await h.create({ appName: 'quiet' });
    h.controller.start();
    await h.eventually(() => expect(h.routes.routableWorkers(quiet.id)).toHaveLength(1));
    const busy = await h.create({ appName: 'busy' });
    const s = spies();
    h.controller.pokeEndpoint(busy.id);
    await h.eventually(async () => {
      expect(h.routes.routableWorkers(busy.id)).toHaveLength(1);
      expect((await h.store.endpoints.get(busy.ownerId, busy.id))?.status.state).toBe('serving');
    });
    expect(h.routes.endpointByAppName('busy')?.id).toBe(busy.id);
    expect(s.wholeListings()).toBe(0);
    expect(s.wholeReads()).toBe(0);
    expect(s.endpointsListed()).toEqual(new Set([busy.id]));
    expect(s.rowsRead()).toEqual(new Set([busy.id]));
    // Several reconciles (the create's end, the probe's result): each of them the busy endpoint's alone.
    expect(h.runtime.counters.creates).toBe(2);
  });

  it('fails a worker whose container exited by its endpoint reconcile, and leaves the others be', async () => {
    const [a, b] = await servingTwo('a', 'b');
    const [dying] = h.routes.routableWorkers(a.id);
    const s = spies();
    h.runtime.exit(dying?.id ?? '', 1);
    await h.flush();
    expect(h.controller.workersOf(a.id).find((w) => w.id === dying?.id)?.state).toBe('failed');
    const rows = await h.store.workers.listByEndpoint(a.id);
    expect(rows.find((w) => w.id === dying?.id)?.status.state).toBe('failed');
    expect(h.routes.routableWorkers(a.id)).toEqual([]);
    expect(h.routes.routableWorkers(b.id)).toHaveLength(1);
    expect(s.wholeListings()).toBe(0);
    expect(s.endpointsListed()).toEqual(new Set([a.id]));
    // Its replacement waits for the crash backoff, which the resync (the whole pass) looks at again.
  });

  it('a GPU freed by one endpoint starts the worker another endpoint had waiting, through their reconciles', async () => {
    // Two GPUs (the harness's inventory): the hog holds both; the other's worker waits.
    h = await controllerHarness(NO_RESYNC);
    const hog = await h.create({
      appName: 'hog',
      workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 1 },
    });
    h.controller.start();
    await h.eventually(() => expect(h.routes.routableWorkers(hog.id)).toHaveLength(2));
    const waiting = await h.create({ appName: 'waiting' });
    h.controller.pokeEndpoint(waiting.id);
    await h.flush();
    expect(h.controller.workersOf(waiting.id).map((w) => w.state)).toEqual(['pending']);

    const s = spies();
    // Written as the API would, but only the hog's reconcile is asked for.
    await h.store.endpoints.mutate(
      hog.ownerId,
      hog.id,
      (current) => ({
        next: {
          ...current,
          spec: { ...current.spec, workers: { ...current.spec.workers, minWorkers: 1, maxWorkers: 1 } },
        },
        events: [],
      }),
      () => ({ at: h.timers.now, ownerId: hog.ownerId, actor: 't', action: 'u', targetId: hog.id }),
    );
    h.controller.pokeEndpoint(hog.id);
    await h.eventually(async () => {
      expect(h.routes.routableWorkers(waiting.id)).toHaveLength(1);
      expect((await h.store.endpoints.get(waiting.ownerId, waiting.id))?.status.state).toBe('serving');
    });
    expect(h.routes.routableWorkers(hog.id)).toHaveLength(1);
    expect(s.wholeListings()).toBe(0);
    expect(s.endpointsListed()).toEqual(new Set([hog.id, waiting.id]));
  });

  it('an endpoint deleted is found so by its reconcile: its workers go and it leaves the routing table', async () => {
    const [gone, kept] = await servingTwo('gone', 'kept');
    const publications = h.routes.publications;
    await deleteEndpoint(h.store, gone, h.timers.now);
    h.controller.pokeEndpoint(gone.id);
    await h.eventually(async () => {
      expect(h.routes.endpointById(gone.id)).toBeUndefined();
      expect(h.routes.endpointByAppName('gone')).toBeUndefined();
      expect(h.controller.workersOf(gone.id)).toEqual([]);
      expect(await h.store.workers.listByEndpoint(gone.id)).toEqual([]);
    });
    expect(h.runtime.counters.removes).toBe(1);
    expect(h.routes.routableWorkers(kept.id)).toHaveLength(1);
    // No whole pass published the table meanwhile.
    expect(h.routes.publications).toBe(publications);
  });

  it("by default, an endpoint's creates that end within 20 ms share one reconcile, 20 ms later", async () => {
    h = await controllerHarness({ ...NO_RESYNC, coalesceMs: 20 });
    const first = await h.create({ appName: 'first' });
    h.controller.start();
    await h.eventually(() => expect(h.routes.routableWorkers(first.id)).toHaveLength(1));
    // Not probed for a while: no health change of theirs comes in between.
    const many = await h.create({
      appName: 'many',
      workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 0 },
      health: { initialDelaySeconds: 10 },
    });
    const reconciles = vi.spyOn(h.controller, 'reconcileEndpoint');
    const ofMany = () => reconciles.mock.calls.filter(([id]) => id === many.id).length;
    // Not a create's end: on the next turn (and its image's pull ending: on the next turn too).
    h.controller.pokeEndpoint(many.id);
    await h.flush();
    const before = ofMany();
    expect(before).toBeGreaterThanOrEqual(1);
    // Its workers were started; their creates ended meanwhile and wait 20 ms for each other.
    expect(h.controller.workersOf(many.id).map((w) => w.state)).toEqual(['starting', 'starting']);
    await h.timers.advanceSettling(19);
    expect(ofMany()).toBe(before);
    await h.timers.advanceSettling(1);
    await h.flush();
    expect(ofMany()).toBe(before + 1);
  });

  it('before the first whole pass, an endpoint reconcile asks for the whole pass instead', async () => {
    h = await controllerHarness(NO_RESYNC);
    const endpoint = await h.create();
    expect(h.controller.adopted).toBe(false);
    const s = spies();
    await h.controller.reconcileEndpoint(endpoint.id);
    expect(s.endpointsListed()).toEqual(new Set());
    await h.flush();
    expect(s.wholeListings()).toBe(1);
    expect(h.controller.adopted).toBe(true);
  });
});
