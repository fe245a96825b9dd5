/**
 * Vitest's global setup: after the whole run, removes what every `corral serve` the e2e suites started left on the
 * Docker engine (containers, volumes, worker networks), whatever a suite's own cleanup missed. startServe records
 * each installation id in a file named by CORRAL_TEST_INSTALLATIONS; the worker processes inherit it from here.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { INSTALLATIONS_ENV } from './installations.js';
import { removeInstallationResources } from './test-image.js';

export default function setup(): () => void {
  // Both integration projects (`integration`, `integration-alone`) name this setup, and vitest runs it once for each in
  // its own process: the first one's file serves the whole run, and its teardown (after every file) cleans up.
  if (process.env[INSTALLATIONS_ENV]) return () => undefined;
  const dir = mkdtempSync(join(tmpdir(), 'corral-test-run-'));
  const file = join(dir, 'installations');
  process.env[INSTALLATIONS_ENV] = file;
  return () => {
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
