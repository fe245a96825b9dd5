/**
 * Part 2, one measured controller run: an endpoint written to the store and the controller poked, timed until
 * its worker is running and healthy in the store, then deleted and timed until its container is gone.
 */
import { randomInt } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import type Dockerode from 'dockerode';
import type { Controller } from '../../src/controller/controller.js';
import { LABELS } from '../../src/runtime/types.js';
import type { Store } from '../../src/store/store.js';
import { deleteEndpoint, sampleEndpoint } from '../../test/support/fixtures.js';
import { removeLabelled } from '../../test/support/test-image.js';
import {
  DOCKER_REMOVE_MAX_MS,
  DOCKER_RUN_MAX_MS,
  SERVE_INTERVAL_MS,
  sleep,
  WORKER_PORT,
} from './settings.js';
import { insertEndpoint } from './store.js';

export interface ControllerRun {
  /** Endpoint written -> the controller's record of its worker exists (the pass that saw the endpoint). */
  decidedMs: number;
  /** -> the container is started (DockerRuntime.create returned). */
  startedMs: number;
  /** -> the probe passed (the controller's readyAt). */
  healthyMs: number;
  /** -> the store says running and healthy (what the API shows): the figure. */
  runningMs: number;
  /** Endpoint deleted -> its container is gone (informative). */
  removedMs: number;
}

export async function controllerRun(
  docker: Dockerode,
  store: Store,
  controller: Controller,
  owner: string,
  image: string,
): Promise<ControllerRun> {
  const endpoint = sampleEndpoint({
    ownerId: owner,
    at: Date.now(),
    patch: {
      image: { ref: image },
      port: WORKER_PORT,
      workers: { minWorkers: 1, maxWorkers: 1, gpusPerWorker: 0 },
      health: { path: '/health' },
    },
  });
  // Not timed: a random point within the controller's interval, so that the wait for its next pass is a fair sample
  // (right after the previous run's removal, a create would otherwise always land just after a pass).
  await sleep(randomInt(SERVE_INTERVAL_MS));
  const createdAt = Date.now();
  const start = performance.now();
  await insertEndpoint(store, { ...endpoint, createdAt, updatedAt: createdAt });
  // What the API does after every change (EndpointService's onChanged, wired to poke() by corral serve).
  controller.poke();
  let runningMs: number | undefined;
  let record: ReturnType<Controller['workers']>[number] | undefined;
  while (performance.now() - start < DOCKER_RUN_MAX_MS) {
    record = controller.workers().find((w) => w.endpointId === endpoint.id);
    if (record?.state === 'failed') throw new Error(`worker failed: ${record.error} ${record.message}`);
    if (record?.state === 'running' && record.healthy) {
      const [row] = await store.workers.listByEndpoint(endpoint.id);
      if (row?.status.state === 'running' && row.healthy) {
        runningMs = performance.now() - start;
        break;
      }
    }
    await sleep(2);
  }
  if (runningMs === undefined || !record) {
    throw new Error(
      `not running after ${DOCKER_RUN_MAX_MS / 1000} s (worker ${record ? `${record.state}: ${record.message}` : 'never created'})`,
    );
  }
  const result: ControllerRun = {
    decidedMs: record.createdAt - createdAt,
    startedMs: (record.startedAt ?? Number.NaN) - createdAt,
    healthyMs: (record.readyAt ?? Number.NaN) - createdAt,
    runningMs,
    removedMs: Number.NaN,
  };

  // Delete it (as the API does) and wait for the controller to remove its container.
  await deleteEndpoint(store, endpoint);
  controller.poke();
  const removeStart = performance.now();
  const label = `${LABELS.endpoint}=${endpoint.id}`;
  while (performance.now() - removeStart < DOCKER_REMOVE_MAX_MS) {
    if ((await docker.listContainers({ all: true, filters: { label: [label] } })).length === 0) {
      result.removedMs = performance.now() - removeStart;
      break;
    }
    await sleep(20);
  }
  if (Number.isNaN(result.removedMs)) {
    await removeLabelled(docker, label);
    throw new Error(
      `the deleted endpoint's container was still there after ${DOCKER_REMOVE_MAX_MS / 1000} s`,
    );
  }
  return result;
}
