/**
 * Part 2, Docker: the controller and gateway built by `buildTraffic` over the real DockerRuntime (scoped to this
 * run's owner), the controller runs interleaved with both baselines, and the cleanup of every container made.
 */
import { randomBytes } from 'node:crypto';
import Dockerode from 'dockerode';
import { Registry } from 'prom-client';
import { buildTraffic } from '../../src/app/build-traffic.js';
import { loadConfig } from '../../src/config/config.js';
import { DockerRuntime, dockerReachable, engineAddress } from '../../src/runtime/docker/docker-runtime.js';
import { LABELS } from '../../src/runtime/types.js';
import { ensureTestImage, removeLabelled, TEST_IMAGE } from '../../test/support/test-image.js';
import { baselineCli, baselineEngineApi } from './baselines.js';
import { type ControllerRun, controllerRun } from './controller-run.js';
import { reportDocker } from './docker-report.js';
import { ScopedRuntime } from './scoped-runtime.js';
import { DOCKER_RUNS, devNullLogger } from './settings.js';
import { openSqlite } from './store.js';

export async function benchDocker(): Promise<void> {
  console.log(
    `\n-- Docker runtime: create to running, test image ${TEST_IMAGE}, ${DOCKER_RUNS} runs, ` +
      'SQLite temp file, real HTTP probe --',
  );
  const docker = new Dockerode();
  if (!(await dockerReachable(docker))) {
    console.log(
      `SKIPPED: no Docker engine answers at ${engineAddress(docker)} (start dockerd to include it)`,
    );
    return;
  }
  const run = randomBytes(4).toString('hex');
  const owner = `bench-${run}`;
  const baselineLabel = `corral.dev/bench-run=${run}`;
  let image: string;
  try {
    image = await ensureTestImage();
  } catch (error) {
    console.log(`SKIPPED: cannot build the test image: ${(error as Error).message.split('\n')[0]}`);
    return;
  }
  const { store, dispose } = await openSqlite();
  const logger = devNullLogger();
  const runtime = new DockerRuntime({
    docker,
    logger,
    namePrefix: `corral-bench-${run}-`,
    requestGpuDevices: false,
  });
  const traffic = buildTraffic({
    config: loadConfig({ flags: {}, env: {}, readFile: () => '' }),
    store,
    runtime: new ScopedRuntime(runtime, { [LABELS.owner]: owner }),
    gpus: [],
    logger,
    registry: new Registry(),
  });
  const { controller } = traffic;
  const controllerRuns: ControllerRun[] = [];
  const cliRuns: number[] = [];
  const apiRuns: number[] = [];
  const problems: string[] = [];
  try {
    traffic.start();
    // One unmeasured start of the image, so that the first measured run does not pay for a cold page cache.
    await baselineEngineApi(docker, image, baselineLabel);
    for (let i = 0; i < DOCKER_RUNS; i++) {
      try {
        controllerRuns.push(await controllerRun(docker, store, controller, owner, image));
      } catch (error) {
        problems.push(`controller run ${i + 1}: ${(error as Error).message}`);
      }
      try {
        cliRuns.push(await baselineCli(image, baselineLabel));
      } catch (error) {
        problems.push(`docker run -d ${i + 1}: ${(error as Error).message}`);
      }
      try {
        apiRuns.push(await baselineEngineApi(docker, image, baselineLabel));
      } catch (error) {
        problems.push(`engine API ${i + 1}: ${(error as Error).message}`);
      }
    }
  } finally {
    await traffic.close();
    const left =
      (await removeLabelled(docker, `${LABELS.owner}=${owner}`)) +
      (await removeLabelled(docker, baselineLabel));
    await runtime.close();
    await dispose();
    console.log(`cleanup: ${left} container(s) of this run were still there and have been removed`);
  }
  reportDocker(controllerRuns, cliRuns, apiRuns, problems);
}
