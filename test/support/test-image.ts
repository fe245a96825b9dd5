/** The test worker (its script and `FROM scratch` image) and the cleanup of labelled Docker containers. */
import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type Docker from 'dockerode';

/** The test worker program; the `local` runtime runs it with the host's node and the worker's env. */
export const WORKER_SCRIPT = fileURLToPath(new URL('../fixtures/worker/worker.mjs', import.meta.url));

/** The script that builds the `FROM scratch` test worker image from this machine's node binary. */
export const BUILD_TEST_IMAGE_SCRIPT = fileURLToPath(
  new URL('../../scripts/build-test-image.sh', import.meta.url),
);

/** Tag of the test worker image that ensureTestImage() builds. */
export const TEST_IMAGE = 'corral-test-worker:latest';

let dockerChecked: boolean | undefined;

/** Whether the Docker engine answers (`docker info` exits 0). Checked once per process. */
export function dockerAvailable(): boolean {
  if (dockerChecked === undefined) {
    const result = spawnSync('docker', ['info'], { stdio: 'ignore', timeout: 15_000 });
    dockerChecked = result.status === 0;
  }
  return dockerChecked;
}

let building: Promise<string> | undefined;

/**
 * Builds the test worker image (or finds it up to date) and returns its tag. The build runs once per test
 * process; the script itself serialises parallel processes and skips the build when nothing changed.
 */
export function ensureTestImage(): Promise<string> {
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
 * Removes every container and volume with the label, whatever state a test or a bench left them in; returns how
 * many containers there were. Never throws: it runs in cleanup, also after a failure.
 */
export async function removeLabelled(docker: Docker, label: string): Promise<number> {
  const containers = await docker.listContainers({ all: true, filters: { label: [label] } }).catch(() => []);
  for (const c of containers)
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch(() => undefined);
  const volumes = await docker.listVolumes({ filters: { label: [label] } }).catch(() => ({ Volumes: [] }));
  for (const v of volumes.Volumes ?? [])
    await docker
      .getVolume(v.Name)
      .remove()
      .catch(() => undefined);
  return containers.length;
}

/**
 * Removes the containers (and their volumes) of one `corral serve` installation, after its test: never those of
 * other suites running beside it on the same engine.
 */
export function removeInstallationContainers(installationId: string): void {
  const ids = execFileSync(
    'docker',
    ['ps', '-aq', '--filter', `label=corral.dev/installation=${installationId}`],
    { encoding: 'utf8' },
  )
    .split('\n')
    .filter(Boolean);
  if (ids.length > 0) execFileSync('docker', ['rm', '-f', '-v', ...ids], { stdio: 'ignore' });
}
