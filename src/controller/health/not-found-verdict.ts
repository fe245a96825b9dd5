/**
 * A health path that answers 404 on every probe is no slow start: the app serves, just not that path, and waiting
 * changes nothing. A worker that has never been ready, whose probes answered 404 for NOT_FOUND_FAIL_MS (and at least
 * NOT_FOUND_FAIL_PROBES times) with no other result between, is failed at once with a cause that says what to set,
 * instead of holding its GPUs and its requests until the startup deadline. Only a named path gets here: the default
 * one asks `/` after a 404 (health-path.ts, fallsBackToRoot). Pure; the planner acts on it.
 */
import { isNotFound, type ProbeResult } from './probe-result.js';

/** The probes in a row that answered 404: since when, and how many. */
export interface NotFoundRun {
  since: number;
  probes: number;
}

/**
 * Long enough for an app that registers its routes a moment after it listens, and for a few probes at a period of
 * up to 5 s; far short of the 300 s startup deadline.
 */
export const NOT_FOUND_FAIL_MS = 10_000;
export const NOT_FOUND_FAIL_PROBES = 3;

/** The run after one more probe result: longer on a 404, over on anything else. */
export function nextNotFoundRun(
  run: NotFoundRun | undefined,
  result: ProbeResult,
  now: number,
): NotFoundRun | undefined {
  if (!isNotFound(result)) return undefined;
  return run ? { since: run.since, probes: run.probes + 1 } : { since: now, probes: 1 };
}

/**
 * The failure's message when the worker must fail now ("GET /ready answered 404 on every probe for 10 s: set
 * healthy.path to a path your app serves"); undefined otherwise.
 */
export function notFoundFailure(
  worker: { readyAt: number | null; notFound?: NotFoundRun | undefined },
  path: string,
  now: number,
): string | undefined {
  const run = worker.notFound;
  if (worker.readyAt !== null || !run) return undefined;
  if (now - run.since < NOT_FOUND_FAIL_MS || run.probes < NOT_FOUND_FAIL_PROBES) return undefined;
  const seconds = Math.floor((now - run.since) / 1000);
  return `GET ${path} answered 404 on every probe for ${seconds} s: set healthy.path to a path your app serves`;
}
