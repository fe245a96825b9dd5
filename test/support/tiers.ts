/**
 * The two test tiers (docs/contributing.md), decided by a test file's name and place so that a new file lands in its tier
 * by convention: `*.int.test.ts` anywhere and everything under test/e2e, test/deploy and test/fixtures is the
 * integration tier (Docker, PostgreSQL, Chromium, a real `corral serve`, real time); every other `*.test.ts` is the
 * unit tier. The suites that run once per store (`describe.each(storeTargets())`) run on SQLite in the unit tier
 * and again on PostgreSQL in the integration tier (`POSTGRES_RERUN`). vitest.config.ts builds its projects from
 * this; tiers.test.ts checks that the unit tier keeps its promise.
 */

import { availableParallelism } from 'node:os';

export type Tier = 'unit' | 'integration';

/** The folders searched for test files. */
export const TEST_ROOTS = ['src', 'test', 'web'];
/** A file name that puts a test in the integration tier wherever it lives. */
export const INTEGRATION_SUFFIX = '.int.test.ts';
/** Folders whose every test is in the integration tier. */
export const INTEGRATION_DIRS = ['test/e2e', 'test/deploy', 'test/fixtures'];

/** The environment variable that picks the stores of `storeTargets()` (test/support/stores.ts) in a project. */
export const STORES_ENV = 'CORRAL_TEST_STORES';
/**
 * `sqlite`: the unit tier; `rerun`: the rerun of the per-store suites on PostgreSQL and on SQLite through its query
 * thread (`corral serve`'s connection); unset: all three (the integration tier).
 */
export type StoresChoice = 'sqlite' | 'rerun';

/**
 * Unit-tier files whose suites run once per store: rerun on PostgreSQL (only) in the integration tier. tiers.test.ts
 * fails when a file that runs `describe.each(storeTargets())` is missing here, or a listed one does not.
 */
export const POSTGRES_RERUN = [
  'src/api/api-keys.test.ts',
  'src/api/client-compat.test.ts',
  'src/api/cluster.test.ts',
  'src/api/count-quotas.test.ts',
  'src/api/endpoint-metrics.test.ts',
  'src/api/endpoints.test.ts',
  'src/api/errors.test.ts',
  'src/api/fuzz.test.ts',
  'src/api/gpus.test.ts',
  'src/api/invoke-keys.test.ts',
  'src/api/jobs.test.ts',
  'src/api/operator-quota.test.ts',
  'src/api/quotas.test.ts',
  'src/api/secret-env-bound.test.ts',
  'src/api/secrets.test.ts',
  'src/api/validation.test.ts',
  'src/api/webhook-secrets.test.ts',
  'src/api/worker-output.test.ts',
  'src/app/build-idle-policy.test.ts',
  'src/app/build-webhooks.test.ts',
  'src/app/first-key.test.ts',
  'src/cluster/membership-watch.test.ts',
  'src/cluster/routing-source.test.ts',
  'src/cluster/stored-gpus.test.ts',
  'src/history/cluster-history.test.ts',
  'src/service/invoke-key-service.test.ts',
  'src/store/cluster/gateway-signals.test.ts',
  'src/store/cluster/leases.test.ts',
  'src/store/endpoints/endpoint-activity.test.ts',
  'src/store/endpoints/endpoint-names.test.ts',
  'src/store/jobs/job-bounds.test.ts',
  'src/store/jobs/job-detail.test.ts',
  'src/store/jobs/jobs.test.ts',
  'src/store/keys/secrets.test.ts',
  'src/store/store.test.ts',
  'src/store/usage/usage-segments.test.ts',
  'src/store/webhooks/webhooks.test.ts',
  'src/store/workers/worker-outputs.test.ts',
  'src/webhooks/outbox.test.ts',
];

/**
 * How many integration files run at once (vitest.config.ts's maxWorkers; `npm test` runs the unit tier in a run of its own,
 * on every core): four by default (one on a one-core machine), `CORRAL_TEST_FILES_AT_ONCE` sets another count.
 * Most integration files wait on Docker, child processes and timers rather than on the CPU. On the quiet 2-core
 * machine the store rerun and the integration projects took 868 s two at a time (2026-11-30, a clean-clone CI
 * run), 716 s three at a time (load up to 5.7), and, with the quiet files apart (INTEGRATION_QUIET), 590 s three at
 * a time against 513 s and 508 s four at a time (2026-11-30, the same tree, one run after another; a third run four
 * at a time, between those two, failed one test on a stale bridge's route, fixed in network-create.ts, and three
 * Docker contract tests whose worker did not answer within 15 s, not explained and not seen again). Three at a time,
 * the CPU time of every process (process accounting) came to 63 % of the two cores' time; four at a time, vmstat
 * showed them 23 % and 20 % idle, most of that in the quiet step. Three at once at load 23 to 25 from other work on
 * the machine (2026-11-29) failed four files on their real-time bounds; those four now run away from the heavier
 * files (INTEGRATION_QUIET).
 */
export const FILES_AT_ONCE = filesAtOnce(process.env.CORRAL_TEST_FILES_AT_ONCE);

function filesAtOnce(setting: string | undefined): number {
  if (setting === undefined || setting === '') return availableParallelism() > 1 ? 4 : 1;
  const count = Number(setting);
  if (!Number.isInteger(count) || count < 1 || count > 16)
    throw new Error(`CORRAL_TEST_FILES_AT_ONCE must be a whole number from 1 to 16, got "${setting}"`);
  return count;
}

/**
 * The integration files that took 20 s or more in a clean-clone CI run (2026-11-30, `.ci/run` at 0c67d1b, three at
 * a time), slowest first: each starts before the other files of its step (test/support/slowest-first.ts), so that
 * none starts last and runs on alone while the other workers wait. A file missing here only starts later;
 * tiers.test.ts checks that each one exists and runs beside others.
 */
export const SLOWEST_FIRST = [
  'test/e2e/replicas.test.ts',
  'test/e2e/replicas-failover-workers.test.ts',
  'test/e2e/installations.test.ts',
  'test/e2e/runpod-sdk-serve.test.ts',
  'test/e2e/serve.test.ts',
  'test/e2e/serve-terminal-log.test.ts',
  'test/e2e/fail-fast.test.ts',
  'test/e2e/gateway.test.ts',
  'test/e2e/replicas-start-together.test.ts',
  'test/e2e/workers.test.ts',
  'test/e2e/usage-replicas.test.ts',
  'test/e2e/replica-faults.test.ts',
  'test/e2e/out-of-memory.test.ts',
  'test/e2e/dashboard.test.ts',
  'src/runtime/docker/docker.contract.int.test.ts',
  'test/e2e/worker-departures.test.ts',
  'test/e2e/idle-tiers.test.ts',
  'test/e2e/health-causes.test.ts',
  'test/e2e/dashboard-models.test.ts',
  'test/docs-examples/docs-examples.int.test.ts',
  'test/e2e/host-safety.test.ts',
  'src/api/endpoints.test.ts',
];

/**
 * Integration-tier files that run once every other file is done, beside one another only (the `integration-quiet`
 * project, FILES_AT_ONCE at a time): their assertions bound real time to a second or two on a path that a loaded
 * CPU stretches (a lease's hand-over, a route's propagation, a socket's close, a cgroup freeze, a health probe's
 * period), or they failed beside the heavier files and passed away from them at the same load (jobs.int.test.ts: its
 * 10 MiB body refused with 413 came back as ECONNRESET, twice in two trials three at a time, at load 23-25; and the
 * four that failed three at a time on 2026-11-29: the sandbox's read-only storage, the docs' gateway example,
 * out-of-memory, the SQLite lease in real time; and replica-wake.test.ts, whose request at the follower went
 * unanswered for its 150 s twice in six clean-clone runs at load up to 5.8, the worker frozen by then: the request
 * likely reached the worker after the leader's drain had read the follower's count, and nothing woke the worker;
 * since 2026-11-30 a request in flight on a resting worker wakes it, autoscaler/scaler.ts). Until 2026-11-30 they ran alone, one after another (252 s of the clean-clone CI run at
 * 0c67d1b); beside one another they load the machine far less than the end-to-end files do, and the replicas' two
 * files (111 s as one file) start first. Every other integration file runs side by side with the rest.
 */
export const INTEGRATION_QUIET = [
  'src/cluster/elector.int.test.ts',
  'src/cluster/queue-sharing.int.test.ts',
  'src/cluster/route-propagation.int.test.ts',
  'src/gateway/pools.int.test.ts',
  'src/gateway/proxy.int.test.ts',
  'src/gateway/websocket.int.test.ts',
  'src/jobs/jobs.int.test.ts',
  'src/runtime/local/local-freezer.int.test.ts',
  'src/store/cluster/leases.int.test.ts',
  'test/docs-examples/docs-examples.int.test.ts',
  'test/e2e/health-causes.test.ts',
  'test/e2e/out-of-memory.test.ts',
  'test/e2e/replica-wake.test.ts',
  'test/e2e/replicas-failover-workers.test.ts',
  'test/e2e/replicas.test.ts',
  'test/e2e/sandbox.test.ts',
];

/**
 * Integration-tier files that run alone, after every other file (the `integration-alone` project, one process): they
 * load the machine for any file beside them (a connection flood).
 */
export const INTEGRATION_ALONE = ['test/e2e/connection-flood.test.ts'];

/** The tier of a test file, by its path from the repository root. */
export function tierOf(path: string): Tier {
  if (path.endsWith(INTEGRATION_SUFFIX)) return 'integration';
  return INTEGRATION_DIRS.some((dir) => path.startsWith(`${dir}/`)) ? 'integration' : 'unit';
}

/** The include globs of the integration tier (the same rule as `tierOf`). */
export function integrationGlobs(): string[] {
  return [
    ...TEST_ROOTS.map((root) => `${root}/**/*${INTEGRATION_SUFFIX}`),
    ...INTEGRATION_DIRS.map((dir) => `${dir}/**/*.test.ts`),
  ];
}

/** The include globs of the unit tier; the integration globs are its excludes. */
export function unitGlobs(): string[] {
  return TEST_ROOTS.map((root) => `${root}/**/*.test.ts`);
}

/** What a unit-tier test file may not do, each with the text that shows it. */
const FORBIDDEN: { what: string; pattern: RegExp; timer?: true }[] = [
  { what: 'vi.waitFor / vi.waitUntil (polls on real time)', pattern: /\bvi\.wait(For|Until)\(/ },
  { what: 'a sleep from node:timers/promises', pattern: /from ['"]node:timers\/promises['"]/ },
  {
    what: 'a call of the real setTimeout or setInterval',
    pattern: /(?<![.\w])set(Timeout|Interval)\(/,
    timer: true,
  },
  { what: 'Docker (dockerAvailable, the test image)', pattern: /\b(dockerAvailable|ensureTestImage)\b/ },
  { what: 'a real `corral serve` (startServe)', pattern: /\bstartServe\b/ },
  { what: 'a service required by CORRAL_REQUIRE_INTEGRATION', pattern: /\bintegrationAvailable\b/ },
  { what: 'PostgreSQL by its URL', pattern: /process\.env\.CORRAL_TEST_DATABASE_URL\b/ },
  { what: 'Chromium', pattern: /\b(launchChromium|chromiumAvailable)\b/ },
];

/** A method named setTimeout declared by a class (a Timers implementation), which is no call. */
const METHOD_DECLARATION = /^\s*set(Timeout|Interval)\(\w+\s*:/;

/** A file that installs Vitest's fake timers: its setTimeout calls are fake. */
const FAKE_TIMERS = /\bvi\.useFakeTimers\(/;

/** What in `text` (a unit-tier test file) breaks the tier's promise: one line per finding, with its line number. */
export function unitTierViolations(text: string): string[] {
  const fakeTimers = FAKE_TIMERS.test(text);
  const found: string[] = [];
  text.split('\n').forEach((line, index) => {
    if (METHOD_DECLARATION.test(line)) return;
    for (const { what, pattern, timer } of FORBIDDEN) {
      if (fakeTimers && timer) continue;
      if (pattern.test(line)) found.push(`line ${index + 1}: ${what}`);
    }
  });
  return found;
}
