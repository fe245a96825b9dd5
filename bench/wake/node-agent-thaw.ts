/**
 * The frozen tier on Kubernetes against Docker's, in the same run: the node agent (`corral node`, a real process,
 * built in dist/) thawing a test worker in a pod cgroup laid out as the kubelet's cgroupfs driver lays it out, in the
 * same cgroup hierarchy Docker uses here, against the engine's unpause of a container of the same worker, interleaved
 * round by round. Each thaw is timed from the call to the call's answer, and to the worker's first answer after it.
 * Issue 33's target: the agent's thaw within 1.5x of Docker's.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import Dockerode from 'dockerode';
import { dockerReachable, engineAddress } from '../../src/runtime/docker/docker-runtime.js';
import { bearer, NODE_AGENT_PATHS } from '../../src/runtime/kubernetes/node-agent-protocol.js';
import { startNodeAgent } from '../../test/support/node-agent-process.js';
import { placeInPodCgroup, removeTestHierarchy, testPodHierarchy } from '../../test/support/pod-cgroups.js';
import { ensureTestImage, removeLabelled, WORKER_SCRIPT } from '../../test/support/test-image.js';
import { createTestWorker, startedPort } from '../controller/baselines.js';
import { freePort, loadAverage, summarize, summaryRow, table } from '../support.js';
import { DOCKER_ROUNDS, getOnce, PAUSED_MS, sleep, waitAnswering } from './settings.js';

/** Issue 33's target: the agent's thaw within this factor of Docker's. */
const TARGET_RATIO = 1.5;

export async function benchNodeAgentThaw(): Promise<void> {
  console.log(
    `\n-- Kubernetes node agent vs Docker: thaw of a worker frozen ${PAUSED_MS} ms (call, and call + first ` +
      `answer on a new connection), ${DOCKER_ROUNDS} interleaved rounds --`,
  );
  const docker = new Dockerode();
  if (!(await dockerReachable(docker))) {
    console.log(`SKIPPED: no Docker engine answers at ${engineAddress(docker)}`);
    return;
  }
  const info = (await docker.info()) as { CgroupVersion?: string };
  const kind = info.CgroupVersion === '2' ? 'v2' : 'v1';
  const hierarchy = testPodHierarchy(kind);
  if ('skip' in hierarchy) {
    console.log(`SKIPPED: no writable cgroup ${kind} here: ${hierarchy.skip}`);
    return;
  }
  const image = await ensureTestImage();
  const label = `corral.dev/bench-run=agent-${randomBytes(4).toString('hex')}`;
  const token = randomUUID();
  const agent = await startNodeAgent(hierarchy, token);
  let worker: ChildProcess | undefined;
  const figures = {
    dockerCall: [] as number[],
    docker: [] as number[],
    agentCall: [] as number[],
    agent: [] as number[],
  };
  const loadBefore = loadAverage();
  try {
    const container = await createTestWorker(docker, image, label);
    const dockerPort = await startedPort(container);
    const workerPort = await freePort();
    worker = spawn(process.execPath, [WORKER_SCRIPT], {
      env: { PATH: process.env.PATH ?? '', HOST: '127.0.0.1', PORT: String(workerPort) },
      stdio: 'ignore',
    });
    const uid = randomUUID();
    placeInPodCgroup(hierarchy, { driver: 'cgroupfs', qos: 'burstable', uid }, worker.pid ?? 0);
    await waitAnswering(dockerPort);
    await waitAnswering(workerPort);
    const agentCall = async (move: 'freeze' | 'thaw') => {
      const answer = await fetch(`http://127.0.0.1:${agent.port}${NODE_AGENT_PATHS.move(uid, move)}`, {
        method: 'POST',
        headers: bearer(token),
      });
      if (answer.status !== 200) throw new Error(`the agent answered ${move} with ${answer.status}`);
      await answer.arrayBuffer();
    };
    for (let round = 0; round < DOCKER_ROUNDS; round++) {
      await container.pause();
      await sleep(PAUSED_MS);
      let start = performance.now();
      await container.unpause();
      figures.dockerCall.push(performance.now() - start);
      if ((await getOnce(dockerPort, '/health')).status !== 200)
        throw new Error('Docker worker did not answer');
      figures.docker.push(performance.now() - start);

      await agentCall('freeze');
      await sleep(PAUSED_MS);
      start = performance.now();
      await agentCall('thaw');
      figures.agentCall.push(performance.now() - start);
      if ((await getOnce(workerPort, '/health')).status !== 200)
        throw new Error('agent worker did not answer');
      figures.agent.push(performance.now() - start);
    }
  } finally {
    worker?.kill('SIGKILL');
    await agent.stop();
    await removeLabelled(docker, label);
    await removeTestHierarchy(hierarchy);
  }
  console.log(
    table(
      ['figure (ms)', 'n', 'p50', 'mean', 'max'],
      [
        summaryRow('Docker: unpause call (engine API)', figures.dockerCall),
        summaryRow('Docker: unpause + first answer', figures.docker),
        summaryRow('node agent: thaw call (HTTP)', figures.agentCall),
        summaryRow('node agent: thaw + first answer', figures.agent),
      ],
    ),
  );
  const ratio = summarize(figures.agent).p50 / summarize(figures.docker).p50;
  const callRatio = summarize(figures.agentCall).p50 / summarize(figures.dockerCall).p50;
  console.log(
    `agent / Docker, thaw + first answer p50: ${ratio.toFixed(2)}x (target <= ${TARGET_RATIO}x: ` +
      `${ratio <= TARGET_RATIO ? 'PASS' : 'FAIL'}); calls alone: ${callRatio.toFixed(2)}x; cgroup ${kind}; ` +
      `load ${loadBefore} before, ${loadAverage()} after`,
  );
}
