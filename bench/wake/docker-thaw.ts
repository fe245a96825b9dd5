/**
 * The frozen tier on Docker: a test worker paused (the cgroup freezer, as `docker pause`) and unpaused, its first
 * answer after the thaw against a warm answer of the same worker, and against the cold start (engine create + start
 * to /health) of the same image, interleaved round by round.
 */
import { randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Dockerode from 'dockerode';
import { dockerReachable, engineAddress } from '../../src/runtime/docker/docker-runtime.js';
import { ensureTestImage, removeLabelled, TEST_IMAGE } from '../../test/support/test-image.js';
import { baselineEngineApi, createTestWorker, startedPort } from '../controller/baselines.js';
import { formatMs, loadAverage, summarize, summaryRow, table } from '../support.js';
import { DOCKER_ROUNDS, getOnce, PAUSED_MS, sleep, THAW_TARGET_MS, waitAnswering } from './settings.js';

export async function benchDockerThaw(): Promise<void> {
  console.log(
    `\n-- Docker: first answer after a thaw (docker pause ${PAUSED_MS} ms, unpause, GET /health on a new ` +
      `connection) vs a warm answer vs a cold start of the same worker, ${DOCKER_ROUNDS} interleaved rounds --`,
  );
  const docker = new Dockerode();
  if (!(await dockerReachable(docker))) {
    console.log(`SKIPPED: no Docker engine answers at ${engineAddress(docker)}`);
    return;
  }
  const image = await ensureTestImage().catch((error: unknown) => {
    console.log(`SKIPPED: cannot build the test image: ${(error as Error).message.split('\n')[0]}`);
    return undefined;
  });
  if (!image) return;
  const label = `corral.dev/bench-run=wake-${randomBytes(4).toString('hex')}`;
  const warm: number[] = [];
  const thaw: number[] = [];
  const unpause: number[] = [];
  const cold: number[] = [];
  const loadBefore = loadAverage();
  try {
    const container = await createTestWorker(docker, image, label);
    const port = await startedPort(container);
    await waitAnswering(port);
    // One unmeasured cold start, so that the first measured one does not pay for a cold page cache.
    await baselineEngineApi(docker, image, label);
    for (let round = 0; round < DOCKER_ROUNDS; round++) {
      warm.push(await timedGet(port));
      await container.pause();
      await sleep(PAUSED_MS);
      const start = performance.now();
      await container.unpause();
      unpause.push(performance.now() - start);
      const answer = await getOnce(port, '/health');
      thaw.push(performance.now() - start);
      if (answer.status !== 200) throw new Error(`the thawed worker answered ${answer.status}`);
      cold.push(await baselineEngineApi(docker, image, label));
    }
  } finally {
    await removeLabelled(docker, label);
  }
  const overWarm = thaw.map((ms, i) => ms - (warm[i] ?? Number.NaN));
  console.log(
    table(
      ['figure (ms)', 'n', 'p50', 'mean', 'max'],
      [
        summaryRow('warm answer', warm),
        summaryRow('thaw: unpause call', unpause),
        summaryRow('thaw: unpause + first answer', thaw),
        summaryRow('thaw first answer - warm answer', overWarm),
        summaryRow(`cold start (create + start to /health)`, cold),
      ],
    ),
  );
  const extra = summarize(overWarm).p50;
  console.log(
    `thaw over warm, p50: ${formatMs(extra)} ms (target < ${THAW_TARGET_MS} ms: ` +
      `${extra < THAW_TARGET_MS ? 'PASS' : 'FAIL'}); cold start / thaw, p50s: ` +
      `${(summarize(cold).p50 / summarize(thaw).p50).toFixed(0)}x; image ${TEST_IMAGE}; load ${loadBefore} before, ${loadAverage()} after`,
  );
}

async function timedGet(port: number): Promise<number> {
  const start = performance.now();
  const answer = await getOnce(port, '/health');
  if (answer.status !== 200) throw new Error(`the warm worker answered ${answer.status}`);
  return performance.now() - start;
}
