/**
 * The real runpod-python worker image (scripts/build-runpod-image.sh, opt-in): whether it is on this machine's Docker
 * engine, and whether its aiohttp can run the SDK's job loop (runpod-python 1.12.0 passes
 * ClientTimeout(ceil_threshold=), aiohttp 3.9 and later). Each answer says once, on stderr, why a suite skips.
 */
import { spawnSync } from 'node:child_process';
import { dockerAvailable } from './test-image.js';

export const RUNPOD_IMAGE = 'corral-runpod-worker:latest';

/** Whether the image exists here; when not, says so and how to build it. */
export function runpodImagePresent(): boolean {
  const present =
    dockerAvailable() &&
    spawnSync('docker', ['image', 'inspect', RUNPOD_IMAGE], { stdio: 'ignore' }).status === 0;
  if (!present)
    process.stderr.write(
      `skipping the runpod-python SDK suite: no image ${RUNPOD_IMAGE}; build it with scripts/build-runpod-image.sh (docs/jobs.md)\n`,
    );
  return present;
}

/** The aiohttp version the image's `corral.dev/aiohttp` label names ('' when absent). */
export function runpodImageAiohttp(): string {
  const inspect = spawnSync(
    'docker',
    ['image', 'inspect', '--format', '{{ index .Config.Labels "corral.dev/aiohttp" }}', RUNPOD_IMAGE],
    { encoding: 'utf8' },
  );
  return inspect.status === 0 ? inspect.stdout.trim() : '';
}

/** Whether the present image's SDK job loop can run (aiohttp 3.9 or later); when not, says why. */
export function runpodJobLoopRuns(): boolean {
  const version = runpodImageAiohttp();
  const [major = 0, minor = 0] = version.split('.').map(Number);
  const runs = major > 3 || (major === 3 && minor >= 9);
  if (!runs)
    process.stderr.write(
      `skipping the runpod-python SDK's job loop: the image's aiohttp ${version || '(unknown)'} predates ClientTimeout(ceil_threshold=), which runpod-python 1.12.0 passes (give scripts/build-runpod-image.sh an aiohttp 3.9 tree; docs/jobs.md)\n`,
    );
  return runs;
}
