import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { type ControllerHarness, controllerHarness } from '../../../test/support/simulated-controller.js';
import type { Endpoint } from '../../domain/endpoint.js';
import { OutputKeeper } from './output-keeper.js';

const silent = { info: () => {}, warn: () => {}, error: () => {} };

describe('Controller: the last output of workers that end', () => {
  let h: ControllerHarness;
  let keeper: OutputKeeper;
  beforeEach(async () => {
    h = await controllerHarness();
    keeper = new OutputKeeper({
      logs: (workerId, options) => h.runtime.logs(workerId, options),
      outputs: h.store.workerOutputs,
      clock: () => h.timers.now,
      timers: h.timers,
      logger: silent,
    });
  });
  afterEach(async () => {
    await keeper.close();
    await h.close();
  });

  const workers = (endpoint: Endpoint) => h.store.workers.listByEndpoint(endpoint.id);
  const running = async (endpoint: Endpoint) =>
    (await workers(endpoint)).filter((w) => w.status.state === 'running');

  it("keeps a crashed worker's output, as failed with its exit, after its container is gone", async () => {
    const endpoint = await h.create({
      patch: { workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } },
    });
    h.controller({ outputs: keeper }).start();
    await h.eventually(async () => expect(await running(endpoint)).toHaveLength(1));
    const [worker] = await running(endpoint);
    const id = worker?.id ?? '';
    h.runtime.appendLog(id, 'EXIT_ON_START: exiting with code 3');
    h.runtime.exit(id, 3);
    await h.eventually(async () => {
      await keeper.close();
      expect(await h.runtime.inspect(id)).toBeUndefined();
      expect(await h.store.workerOutputs.get(endpoint.id, id)).toMatchObject({
        failed: true,
        reason: 'worker exited with code 3',
        lines: ['EXIT_ON_START: exiting with code 3'],
      });
    });
  });

  it("an endpoint created since the last whole pass: its crashed worker's output is kept and its last line logged", async () => {
    const warned: { fields: object; message: string }[] = [];
    const logger = { ...silent, warn: (fields: object, message: string) => warned.push({ fields, message }) };
    // No whole pass comes while the endpoint lives: only its own reconciles (an API change, its worker's events).
    const controller = h.controller({ outputs: keeper, logger, intervalMs: 3_600_000 });
    controller.start();
    await h.flush();
    const endpoint = await h.create({
      patch: { workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 1 } },
    });
    controller.pokeEndpoint(endpoint.id);
    await h.eventually(async () => expect(await running(endpoint)).toHaveLength(1));
    const id = (await running(endpoint))[0]?.id ?? '';
    h.runtime.appendLog(id, 'Traceback (most recent call last):');
    h.runtime.appendLog(id, 'ModuleNotFoundError: torch');
    h.runtime.exit(id, 1);
    await h.eventually(async () => {
      await keeper.close();
      expect((await h.store.workerOutputs.get(endpoint.id, id))?.lines).toEqual([
        'Traceback (most recent call last):',
        'ModuleNotFoundError: torch',
      ]);
      expect(warned.find((w) => (w.fields as { workerId?: string }).workerId === id)).toMatchObject({
        message: `endpoint ${endpoint.id}: worker ${id} exited with code 1: "ModuleNotFoundError: torch"`,
        fields: { exitCode: 1, output: ['Traceback (most recent call last):', 'ModuleNotFoundError: torch'] },
      });
    });
  });

  it("keeps a scaled-down worker's output as not failed", async () => {
    const endpoint = await h.create({
      patch: { workers: { minWorkers: 2, maxWorkers: 2, gpusPerWorker: 1 } },
    });
    h.controller({ outputs: keeper }).start();
    await h.eventually(async () => expect(await running(endpoint)).toHaveLength(2));
    for (const w of await running(endpoint)) h.runtime.appendLog(w.id, `serving as ${w.id}`);
    await h.store.endpoints.mutate(
      endpoint.ownerId,
      endpoint.id,
      (current) => ({
        next: {
          ...current,
          spec: { ...current.spec, workers: { ...current.spec.workers, minWorkers: 1, maxWorkers: 1 } },
          updatedAt: h.timers.now,
        },
        events: [],
      }),
      () => ({ at: h.timers.now, ownerId: endpoint.ownerId, actor: 't', action: 'u', targetId: endpoint.id }),
    );
    await h.eventually(async () => {
      await keeper.close();
      const ended = await h.store.workerOutputs.listByEndpoint(endpoint.id);
      expect(ended).toHaveLength(1);
      expect(ended[0]).toMatchObject({ failed: false });
      const kept = await h.store.workerOutputs.get(endpoint.id, ended[0]?.workerId ?? '');
      expect(kept?.lines).toEqual([`serving as ${ended[0]?.workerId}`]);
    });
  });
});
