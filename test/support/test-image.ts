/** The test worker (its script and `FROM scratch` image) and the cleanup of labelled Docker containers. */

import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';
import { FIREWALL_CHAIN, installationRuleRemovals } from '../../src/runtime/docker/firewall-rules.js';

/** The test worker program; the `local` runtime runs it with the host's node and the worker's env. */
export const WORKER_SCRIPT = fileURLToPath(new URL('../fixtures/worker/worker.mjs', import.meta.url));

/** The script that builds the `FROM scratch` test worker image from this machine's node binary. */
export const BUILD_TEST_IMAGE_SCRIPT = fileURLToPath(
  new URL('../../scripts/build-test-image.sh', import.meta.url),
);

/** Tag of the test worker image that ensureTestImage() builds. */
export const TEST_IMAGE = 'corral-test-worker:latest';

/**
 * Set by the integration tier's global setup (global-setup.ts) for every test process of the run: `DOCKER_ENV` says
 * whether the engine answered ('1' or '0'), `TEST_IMAGE_ENV` names the test worker image it built (or found up to
 * date), so that each file does not ask again (`docker info` and the build script cost a second or so a file).
 */
export const DOCKER_ENV = 'CORRAL_TEST_DOCKER';
export const TEST_IMAGE_ENV = 'CORRAL_TEST_IMAGE_BUILT';

let dockerChecked: boolean | undefined;

/** Whether the Docker engine answers (`docker info` exits 0). Checked once per run (or once per process). */
export function dockerAvailable(): boolean {
  const checked = process.env[DOCKER_ENV];
  if (checked === '1' || checked === '0') return checked === '1';
  if (dockerChecked === undefined) {
    const result = spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 15_000 });
    dockerChecked = result.status === 0;
  }
  return dockerChecked;
}

let building: Promise<string> | undefined;

/**
 * Builds the test worker image (or finds it up to date) and returns its tag. The build runs once per run (the global
 * setup's, `TEST_IMAGE_ENV`), else once per test process; the script itself serialises parallel processes and skips
 * the build when nothing changed.
 */
export function ensureTestImage(): Promise<string> {
  const built = process.env[TEST_IMAGE_ENV];
  if (built) return Promise.resolve(built);
  building ??= new Promise<string>((resolve, reject) => {
    execFile(
      'bash',
      [BUILD_TEST_IMAGE_SCRIPT, TEST_IMAGE],
      { timeout: 180_000, maxBuffer: 16 * 1024 * 1024 },
      (err, stdout, stderr) => {
        if (err) {
          reject(new Error(`building the test worker image failed: ${err.message}\n${stdout}${stderr}`));
          return;
        }
        resolve(stdout.trim().split('\n').pop() || TEST_IMAGE);
      },
    );
  }).catch((err: unknown) => {
    building = undefined; // let a later caller retry
    throw err;
  });
  return building;
}

/**
 * Removes every container and volume with the label, and the worker networks those containers joined, whatever
 * state a test or a bench left them in; returns how many containers there were. Never throws: it runs in cleanup,
 * also after a failure.
 */
export async function removeLabelled(docker: Docker, label: string): Promise<number> {
  const containers = await docker.listContainers({ all: true, filters: { label: [label] } }).catch(() => []);
  for (const c of containers)
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
  // The worker networks they joined go too (the engine refuses while another container still uses one).
  const networks = new Set(
    containers.map((c) => c.Labels?.['corral.dev/network']).filter((n) => n !== undefined),
  );
  for (const name of networks)
    await docker
      .getNetwork(name)
      .remove()
      .catch(() => undefined);
  const volumes = await docker.listVolumes({ filters: { label: [label] } }).catch(() => ({ Volumes: [] }));
  for (const v of volumes.Volumes ?? [])
    await docker
      .getVolume(v.Name)
      .remove()
      .catch(() => undefined);
  return containers.length;
}

/** The ids of the running containers of an installation (of one endpoint, when given), sorted. */
export function containersOf(installationId: string, endpointId?: string): string[] {
  return execFileSync(
    'docker',
    [
      'ps',
      '--no-trunc',
      '--filter',
      `label=corral.dev/installation=${installationId}`,
      ...(endpointId ? ['--filter', `label=corral.dev/endpoint=${endpointId}`] : []),
      '--format',
      '{{.ID}}',
    ],
    { encoding: 'utf8' },
  )
    .split('\n')
    .filter(Boolean)
    .sort();
}

/**
 * Removes what one `corral serve` installation left on the engine after its test: its containers (and their
 * volumes), then its worker networks, then its holes in the host guard's chain, never those of other suites running
 * beside it. Networks matter: Docker's default address pools hold about 30, and a run of the suites that left each
 * installation's behind ran out of them. Holes: a serve killed with SIGKILL leaves its own (267 had piled up in
 * CORRAL-WORKERS on the development machine over a day of runs). Never throws: it runs in cleanup, also where there is no
 * Docker or iptables at all.
 */
export function removeInstallationResources(installationId: string): void {
  const filter = `label=corral.dev/installation=${installationId}`;
  const listed = (...args: string[]): string[] => {
    const out = spawnSync('docker', [...args, '-q', '--filter', filter], { encoding: 'utf8' });
    return out.status === 0 ? out.stdout.split('\n').filter(Boolean) : [];
  };
  const containers = listed('ps', '-a');
  if (containers.length > 0) spawnSync('docker', ['rm', '-f', '-v', ...containers], { stdio: 'ignore' });
  const networks = listed('network', 'ls');
  if (networks.length > 0) spawnSync('docker', ['network', 'rm', ...networks], { stdio: 'ignore' });
  const chain = spawnSync('iptables', ['-w', '-S', FIREWALL_CHAIN], { encoding: 'utf8' });
  if (chain.status !== 0) return;
  for (const args of installationRuleRemovals(chain.stdout, installationId))
    spawnSync('iptables', args, { stdio: 'ignore' });
}

/**
 * The usual e2e endpoint's fields on the test worker image: one worker of one simulated h100-80g, its port and
 * health path; spread into an `endpoint` body and add what a test is about.
 */
export function testWorkerEndpoint(image: string) {
  return {
    image: { image },
    ports: [{ port: 8000 }],
    workerConfig: { minNum: 1, maxNum: 1, gpuNum: 1 },
    healthy: { path: '/health' },
    products: [{ id: 'h100-80g' }],
  };
}

/**
 * An endpoint `name` whose one warm worker (four slots, one GPU) is the plain test worker run by the host's node on
 * the `local` runtime, its image `image` a label (nothing is pulled); spread it into an `endpoint` body.
 */
export function localWorkerEndpoint(name: string, image: string) {
  return {
    name,
    workerConfig: { minNum: 1, maxNum: 1, freeTimeout: 300, maxConcurrent: 4, gpuNum: 1 },
    image: { image, command: `'${process.execPath}' '${WORKER_SCRIPT}'` },
    ports: [{ port: 8000 }],
  };
}

/**
 * An `http` endpoint whose one warm worker (one slot) is the plain test worker run by the host's node on the
 * `local` runtime, taking its jobs at `POST /sleep` (the job's `{"ms", "mark"}`: test/fixtures/worker/worker.mjs).
 */
export function localSleeperEndpoint(appName: string) {
  return {
    appName,
    jobsPath: '/sleep',
    ports: [{ port: 8000 }],
    workerConfig: { minNum: 1, maxNum: 1, freeTimeout: 300, maxConcurrent: 1, gpuNum: 1 },
    image: { image: 'plain-worker:local', command: `'${process.execPath}' '${WORKER_SCRIPT}'` },
  };
}

/**
 * Builds `tag`, a local image standing in for a registry image (no registry is reachable from the tests): the test
 * worker image with `lines` of a Dockerfile on top (an ENV, a CMD). Returns the tag.
 */
export async function ensureStandInImage(tag: string, lines: string[]): Promise<string> {
  const base = await ensureTestImage();
  execFileSync('docker', ['build', '-q', '-t', tag, '-'], {
    input: [`FROM ${base}`, ...lines, ''].join('\n'),
    stdio: ['pipe', 'ignore', 'inherit'],
  });
  return tag;
}

/**
 * Pushes a copy of the test image to `reference` (a registry on 127.0.0.1) and leaves nothing of it on the engine:
 * a copy with an image id of its own (a label), since a push or a pull gives the image pushed a RepoDigest, and
 * the image guard of every `corral serve` beside it would then check the shared test image against that registry.
 */
export async function pushTestImageCopy(reference: string): Promise<string> {
  const copy = await ensureStandInImage(`corral-test-pushed:${randomUUID().slice(0, 8)}`, [
    `LABEL corral.test.pushed="${reference}"`,
  ]);
  execFileSync('docker', ['tag', copy, reference]);
  execFileSync('docker', ['push', '-q', reference], { stdio: 'ignore' });
  // Gone under both names (its layers stay, as the test image's): a start must pull it.
  execFileSync('docker', ['rmi', copy, reference], { stdio: 'ignore' });
  return reference;
}

/** The stand-in for `nginx:latest`: serves `/` and answers 404 on `/health`, as stock nginx does. */
export const NGINX_STAND_IN = { tag: 'corral-test-nginx:latest', lines: ['ENV HEALTH_PATH=/'] };
