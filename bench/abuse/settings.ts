/** The abuse suite's fixed counts, durations, sizes and target. */
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** Owner B's endpoints, seeded before measuring; its list reads all of them (one page). */
export const B_ENDPOINTS = 20;
/** Owner B's list under each condition: at most this many requests, one in flight, and at most this long. */
export const IDLE_BOUNDS = { count: 300, maxMs: 8_000 };
export const FLOOD_BOUNDS = { count: 400, maxMs: 10_000 };
/** B lists at most 40 times a second, within its own rate limit (50 a second by default), as a client would. */
export const B_INTERVAL_MS = 25;
/** Owner A's flood: this many requests in flight at once, from a child process. */
export const FLOOD_CONNECTIONS = 4;
/** The oversized create: 20,000 envs, about 0.9 MB. */
export const OVERSIZED_ENVS = 20_000;
/** A valid create as large as the bounds allow: 100 envs, the body just under the 64 KiB create limit. */
export const MAXIMAL_ENVS = 100;
export const SPEC_BODY_LIMIT_BYTES = 64 * 1024;
/** The target of issue 11: another owner's list p99 under the flood within this factor of idle. */
export const P99_RATIO_TARGET = 3;
export const SIMULATED_GPUS = 'h100-80g:8';
/**
 * The server runs twice: with `corral serve`'s defaults (a key may make 50 requests per second, bursts of 100, each
 * 16 KiB of body counting as one more), and with the rate limit raised so far that it never answers, so that what
 * is measured is what the sizes and quotas alone refuse (an owner may hold many keys, each with its own bucket).
 */
export const CONFIGURATIONS = [
  { name: "serve's defaults (rate limit 50/s, bursts of 100, +1 per 16 KiB of body)", text: '' },
  {
    name: 'rate limit out of the way: sizes and quotas alone',
    text: 'rateLimit: { requestsPerSecond: 1000000, burst: 1000000 }\n',
  },
];
