/**
 * Part 2's floor: the same image started by `docker run -d` and by the engine API (create + start, what
 * DockerRuntime calls), each timed to its /health answering 200.
 */
import { execFile } from 'node:child_process';
import { performance } from 'node:perf_hooks';
import { promisify } from 'node:util';
import Dockerode from 'dockerode';
import { httpProbe } from '../../src/controller/health/http-probe.js';
import { probePassed } from '../../src/controller/health/probe-result.js';
import { freePort } from '../support.js';
import { BASELINE_PROBE_EVERY_MS, DOCKER_RUN_MAX_MS, sleep, WORKER_PORT } from './settings.js';

const execFileAsync = promisify(execFile);

/** Time from `docker run -d` to /health answering 200 on the published port. */
export async function baselineCli(image: string, label: string): Promise<number> {
  const port = await freePort();
  const start = performance.now();
  const { stdout } = await execFileAsync(
    'docker',
    [
      'run',
      '-d',
      '--label',
      label,
      '-e',
      `PORT=${WORKER_PORT}`,
      '-p',
      `127.0.0.1:${port}:${WORKER_PORT}`,
      image,
    ],
    { timeout: 30_000 },
  );
  try {
    return await waitHealthy(port, start);
  } finally {
    await removeContainer(new Dockerode(), stdout.trim());
  }
}

/** Time from the engine API's create + start (what DockerRuntime does) to /health answering 200. */
export async function baselineEngineApi(docker: Dockerode, image: string, label: string): Promise<number> {
  const start = performance.now();
  const container = await createTestWorker(docker, image, label);
  try {
    return await waitHealthy(await startedPort(container), start);
  } finally {
    await removeContainer(docker, container.id);
  }
}

/** A container of the test image with the label, its worker port published on 127.0.0.1; not started. */
export function createTestWorker(
  docker: Dockerode,
  image: string,
  label: string,
): Promise<Dockerode.Container> {
  const [key = '', value = ''] = label.split('=');
  return docker.createContainer({
    Image: image,
    Env: [`PORT=${WORKER_PORT}`],
    Labels: { [key]: value },
    ExposedPorts: { [`${WORKER_PORT}/tcp`]: {} },
    HostConfig: { PortBindings: { [`${WORKER_PORT}/tcp`]: [{ HostIp: '127.0.0.1', HostPort: '' }] } },
  });
}

/** Starts the container and answers the host port its worker port was published on. */
export async function startedPort(container: Dockerode.Container): Promise<number> {
  await container.start();
  const info = await container.inspect();
  const port = Number(info.NetworkSettings.Ports[`${WORKER_PORT}/tcp`]?.[0]?.HostPort);
  if (!Number.isInteger(port) || port <= 0) throw new Error('no published port');
  return port;
}

async function waitHealthy(port: number, start: number): Promise<number> {
  while (performance.now() - start < DOCKER_RUN_MAX_MS) {
    if (probePassed(await httpProbe({ host: '127.0.0.1', port }, '/health', 2_000)))
      return performance.now() - start;
    await sleep(BASELINE_PROBE_EVERY_MS);
  }
  throw new Error(`/health did not answer 200 within ${DOCKER_RUN_MAX_MS / 1000} s`);
}

async function removeContainer(docker: Dockerode, id: string): Promise<void> {
  await docker
    .getContainer(id)
    .remove({ force: true, v: true })
    .catch(() => undefined);
}
