/** Where the e2e suites note the installations they start, for global-setup.ts to clean up after the run. */
import { appendFileSync } from 'node:fs';

export const INSTALLATIONS_ENV = 'CORRAL_TEST_INSTALLATIONS';

/** Notes an installation id (nothing outside a vitest run, where no file is named). */
export function noteInstallation(installationId: string): void {
  const file = process.env[INSTALLATIONS_ENV];
  if (file) appendFileSync(file, `${installationId}\n`);
}
