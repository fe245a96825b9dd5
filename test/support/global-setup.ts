/**
 * Vitest's global setup: asks Docker once and builds the test worker image once for the whole run (test-image.ts);
 * after the whole run, removes what every `corral serve` the e2e suites started left on the
 * Docker engine (containers, volumes, worker networks, holes in the host guard's chain), whatever a suite's own
 * cleanup missed, and kills the processes of the run still alive (run-processes.ts: local-runtime workers outlive
 * their serve). startServe records each installation id in a file named by CORRAL_TEST_INSTALLATIONS, which the test
 * files inherit from here, as every process of the run inherits the run's mark (RUN_MARK_ENV).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INSTALLATIONS_ENV } from './installations.js';
import { killMarkedOrphans, RUN_MARK_ENV } from './run-processes.js';
import {
  DOCKER_ENV,
  dockerAvailable,
  ensureTestImage,
  removeInstallationResources,
  TEST_IMAGE_ENV,
} from './test-image.js';

export default async function setup(): Promise<() => void> {
  // The integration projects (`integration`, `integration-quiet`, `integration-alone`) name this setup, and vitest
  // runs it once for each in its own process: the first one's file serves the whole run, and its teardown (after
  // every file) cleans up.
  if (process.env[INSTALLATIONS_ENV]) return () => undefined;
  const dir = mkdtempSync(join(tmpdir(), 'corral-test-run-'));
  const file = join(dir, 'installations');
  process.env[INSTALLATIONS_ENV] = file;
  process.env[RUN_MARK_ENV] = dir;
  // Docker asked once, and the test worker image built once, for every file of the run (test-image.ts).
  const docker = dockerAvailable();
  process.env[DOCKER_ENV] = docker ? '1' : '0';
  if (docker) {
    // A failed build is left to the files that need the image: each tries again and fails saying why.
    await ensureTestImage().then(
      (tag) => {
        process.env[TEST_IMAGE_ENV] = tag;
      },
      () => undefined,
    );
  }
  return () => {
    const killed = killMarkedOrphans(`${RUN_MARK_ENV}=${dir}`);
    if (killed > 0) process.stderr.write(`killed ${killed} process(es) the run left running\n`);
    const ids = new Set(readLines(file));
    for (const id of ids) removeInstallationResources(id);
    rmSync(dir, { recursive: true, force: true });
  };
}

function readLines(file: string): string[] {
  try {
    return readFileSync(file, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}
