import { describe, expect, it } from 'vitest';
import { type NotFoundRun, nextNotFoundRun, notFoundFailure } from './not-found-verdict.js';
import { answered, type ProbeResult } from './probe-result.js';

const REFUSED: ProbeResult = { kind: 'error', code: 'ECONNREFUSED', message: 'connect ECONNREFUSED' };

/** The run after `results`, one every `stepMs` from 0. */
function runOf(results: ProbeResult[], stepMs: number): NotFoundRun | undefined {
  let run: NotFoundRun | undefined;
  results.forEach((result, i) => {
    run = nextNotFoundRun(run, result, i * stepMs);
  });
  return run;
}

describe('a health path that answers 404 on every probe', () => {
  it('fails a starting worker once 404 has been the only answer for 10 s, naming the path and what to set', () => {
    // The app listens after 1 s (refused until then), then answers 404 every 50 ms.
    const results = [...Array(20).fill(REFUSED), ...Array(201).fill(answered(404))];
    const run = runOf(results, 50);
    expect(run).toEqual({ since: 1000, probes: 201 });
    const worker = { readyAt: null, notFound: run };
    expect(notFoundFailure(worker, '/ready', 10_999)).toBeUndefined();
    expect(notFoundFailure(worker, '/ready', 11_000)).toBe(
      'GET /ready answered 404 on every probe for 10 s: set healthy.path to a path your app serves',
    );
  });

  it('starts over at any other answer: an app that is still loading is not judged by an old 404', () => {
    const run = runOf([answered(404), answered(404), answered(503), answered(404)], 5000);
    expect(run).toEqual({ since: 15_000, probes: 1 });
    expect(notFoundFailure({ readyAt: null, notFound: run }, '/ready', 20_000)).toBeUndefined();
  });

  it('needs a few probes, not only the time: two probes at a 10 s period prove little', () => {
    const worker = { readyAt: null, notFound: { since: 0, probes: 2 } };
    expect(notFoundFailure(worker, '/ready', 20_000)).toBeUndefined();
    expect(notFoundFailure({ ...worker, notFound: { since: 0, probes: 3 } }, '/ready', 20_000)).toMatch(
      /for 20 s/,
    );
  });

  it('never fails a worker that has served: its 404s are the unhealthy deadline’s to judge', () => {
    expect(
      notFoundFailure({ readyAt: 5, notFound: { since: 0, probes: 500 } }, '/ready', 60_000),
    ).toBeUndefined();
  });
});
