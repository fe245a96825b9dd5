/**
 * Integration suites need real services. On a developer box without them a suite is skipped and says
 * why; with CORRAL_REQUIRE_INTEGRATION=1 (as `.ci/run` sets) a missing service fails the run instead.
 */
export function integrationAvailable(service: string, available: boolean, hint: string): boolean {
  if (available) return true;
  if (process.env.CORRAL_REQUIRE_INTEGRATION === '1') {
    throw new Error(`${service} is required (CORRAL_REQUIRE_INTEGRATION=1) but not available: ${hint}`);
  }
  process.stderr.write(`skipping ${service} suites: ${hint}\n`);
  return false;
}
