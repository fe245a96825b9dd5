/** The tenant-isolation suite's sizes, counts, bounds and targets (issue 29's last "Done when" line). */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const MIB = 1024 * 1024;

/** Issue 29 item 3: one http job whose app answers this many bytes of JSON (the 400 MB, read as 419 MB). */
export const ANSWER_BYTES = Number(process.env.CORRAL_BENCH_ISOLATION_ANSWER_MB ?? 400) * MIB;
/** Item 4: this many `run`s of this size each (the 60 jobs of 9.5 MB), low priority, this many at once. */
export const HOARD_JOBS = Number(process.env.CORRAL_BENCH_ISOLATION_HOARD_JOBS ?? 60);
export const HOARD_BODY_BYTES = 9.5 * MIB;
export const HOARD_IN_FLIGHT = 4;
/** Item 5: one job whose worker streams this many chunks of this size (the 400 chunks of 1 MB). */
export const STREAM_CHUNKS = Number(process.env.CORRAL_BENCH_ISOLATION_STREAM_CHUNKS ?? 400);
export const STREAM_CHUNK_BYTES = MIB;
/** Which of items 3, 4 and 5 tenant A runs (all three by default; one alone says which weighs what). */
export const ITEMS = new Set((process.env.CORRAL_BENCH_ISOLATION_ITEMS ?? '3,4,5').split(',').map(Number));
/** How often tenant A reads a job's status while it waits for its end. */
export const POLL_MS = 500;
/** Stream reads after the job ended, at most (one gave all 419 MB in the issue; a bounded batch needs more). */
export const STREAM_READS = 100;

/** Tenant B: one request in flight, at most one every this many ms, `/healthz` and a gateway call in turn. */
export const B_INTERVAL_MS = 20;
/** B's requests before measuring (the first ones compile the routes' code), not measured. */
export const WARM_UP_REQUESTS = 40;
/** The baseline: at most this many of each of B's two calls, and at most this long. */
export const BASELINE_BOUNDS = { count: 300, maxMs: 15_000 };
/** The attack: B measures until tenant A is done, at most this long (A's requests are aborted then). */
export const ATTACK_MAX_MS = Number(process.env.CORRAL_BENCH_ISOLATION_ATTACK_S ?? 90) * 1000;
/** B's client gives up on a request after this long (counted as a failure, with the time it waited). */
export const B_REQUEST_TIMEOUT_MS = 10_000;

/** The server's RSS, read from /proc/<pid>/status, this often. */
export const SAMPLE_MS = 100;
/**
 * On a machine shared with other work: above this RSS the server is killed and the attack ends there (the figure is
 * then "at least" this). The issue measured 3.46 GB for item 3 alone.
 */
export const RSS_CAP_MIB = Number(process.env.CORRAL_BENCH_ISOLATION_RSS_CAP_MB ?? 8000);

/** The targets of issue 29: the server's memory, and B's p99s. */
export const TARGET_RSS_MB = 500;
export const TARGET_P99_MS = 100;
/** With this set to 1 the suite exits non-zero when a target is missed; by default it only reports. */
export const STRICT = process.env.CORRAL_BENCH_ISOLATION_STRICT === '1';
/** With a directory here, the server runs under `node --cpu-prof` and the suite prints where its time went. */
export const PROFILE_DIR = process.env.CORRAL_BENCH_ISOLATION_CPU_PROF;
