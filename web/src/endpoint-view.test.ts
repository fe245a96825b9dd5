import { describe, expect, it } from 'vitest';
import type { WireEndpoint, WireWorker } from '../../src/client/index.js';
import { sampleWireEndpoint } from '../../test/support/wire-fixtures.js';
import {
  age,
  callLines,
  curlFor,
  filterAndSort,
  gpuLine,
  ms,
  recentLine,
  stateLine,
  trafficWindowLine,
  workerCounts,
  workersLine,
} from './endpoint-view.js';

function worker(state: string, healthy: boolean): WireWorker {
  return { id: `w-${state}`, state: { state, error: '', message: '' }, log: '', metrics: '', healthy };
}

/** The test suites' wire endpoint (test/support), as the pages' tables expect it here: "one", up to 3 workers of 2 GPUs. */
function endpoint(overrides: Partial<WireEndpoint> = {}): WireEndpoint {
  const base = sampleWireEndpoint(8000);
  return sampleWireEndpoint(8000, {
    id: 'id1',
    name: 'one',
    appName: 'one',
    url: 'http://one.localhost:8000',
    workerConfig: { ...base.workerConfig, maxNum: 3, freeTimeout: '60', maxConcurrent: '1', gpuNum: 2 },
    policy: { type: 'queue', value: '4' },
    image: { image: 'x', authId: '', command: '' },
    products: [],
    ...overrides,
  });
}

describe('what the endpoint pages show', () => {
  it('counts ready, present and most workers; stopped and failed ones are not present', () => {
    const workers = [
      worker('running', true),
      worker('running', false),
      worker('starting', false),
      worker('failed', false),
      worker('stopped', false),
    ];
    expect(workerCounts(endpoint({ workers }))).toEqual({ ready: 1, present: 3, max: 3 });
  });

  it('says the state with its reason', () => {
    expect(stateLine({ state: 'serving', error: '', message: '' })).toBe('serving');
    expect(stateLine({ state: 'failed', error: 'CRASH_LOOP', message: 'exits 3' })).toBe(
      'failed (CRASH_LOOP): exits 3',
    );
  });

  it('names the GPUs', () => {
    expect(gpuLine(endpoint())).toBe('2 x any product');
    expect(gpuLine(endpoint({ products: [{ id: 'h100-80g' }, { id: 'a100-40g' }] }))).toBe(
      '2 x h100-80g or a100-40g',
    );
  });

  it('gives a curl command with the key only where one is needed', () => {
    expect(curlFor(endpoint())).toBe(
      'curl -sS -H "Authorization: Bearer $CORRAL_API_KEY" http://one.localhost:8000/',
    );
    expect(curlFor(endpoint({ public: true, url: 'http://x/' }))).toBe('curl -sS http://x/');
  });

  it('calls a queue endpoint at /run and /runsync first, its curl a runsync with an input; an http one at its URL', () => {
    const jobUrls = {
      run: 'http://127.0.0.1:8000/v2/e1/run',
      runsync: 'http://127.0.0.1:8000/v2/e1/runsync',
      status: 'http://127.0.0.1:8000/v2/e1/status/{jobId}',
      health: 'http://127.0.0.1:8000/v2/e1/health',
    };
    const queue = callLines(endpoint({ type: 'queue', jobUrls }));
    expect(queue.lines.map((l) => [l.label, l.method, l.url, l.withCurl])).toEqual([
      ['Run', 'POST', jobUrls.run, false],
      ['Run sync', 'POST', jobUrls.runsync, true],
      ['Status', 'GET', jobUrls.status, false],
      ['Health', 'GET', jobUrls.health, false],
    ]);
    expect(queue.curl).toBe(
      `curl -sS -X POST -H "Authorization: Bearer $CORRAL_API_KEY" -H 'Content-Type: application/json' -d '{"input": {}}' ${jobUrls.runsync}`,
    );
    // Public or not: the jobs API always takes a key.
    expect(callLines(endpoint({ type: 'queue', jobUrls, public: true })).curl).toContain('Authorization');
    const http = callLines(endpoint({ jobUrls }));
    expect(http.lines).toEqual([{ label: 'URL', url: 'http://one.localhost:8000', withCurl: true }]);
    expect(http.curl).toBe(curlFor(endpoint()));
  });

  it('filters by name, appName, id or state and sorts', () => {
    const list = [
      endpoint({ id: 'a', name: 'zeta', state: { state: 'failed', error: 'CRASH_LOOP', message: '' } }),
      endpoint({ id: 'b', name: 'alpha', workers: [worker('running', true)] }),
      endpoint({ id: 'c', name: '', appName: 'beta' }),
    ];
    expect(filterAndSort(list, '', 'newest').map((e) => e.id)).toEqual(['a', 'b', 'c']);
    expect(filterAndSort(list, '', 'name').map((e) => e.id)).toEqual(['b', 'c', 'a']);
    expect(filterAndSort(list, '', 'ready').map((e) => e.id)).toEqual(['b', 'a', 'c']);
    expect(filterAndSort(list, 'crash', 'newest').map((e) => e.id)).toEqual(['a']);
    expect(filterAndSort(list, 'BETA', 'newest').map((e) => e.id)).toEqual(['c']);
  });

  it('writes ages and latencies for people', () => {
    expect(age(0, 30_000)).toBe('30 s');
    expect(age(0, 10 * 60_000)).toBe('10 min');
    expect(age(0, 5 * 3_600_000)).toBe('5 h');
    expect(age(0, 3 * 86_400_000)).toBe('3 d');
    expect(ms(null)).toBe('-');
    expect(ms(2.345)).toBe('2.3 ms');
    expect(ms(123.4)).toBe('123 ms');
  });
});

describe('the Endpoints list figures', () => {
  it('says ready / desired / max, with - before the autoscaler decided', () => {
    expect(workersLine({ ready: 1, present: 2, max: 3 }, 2)).toBe('1 / 2 / 3');
    expect(workersLine({ ready: 0, present: 0, max: 3 }, null)).toBe('0 / - / 3');
  });

  it('says the requests per minute and p50 / p99 of the last minutes', () => {
    const recent = (requestsPerMinute: number, p50: number | null, p99: number | null) => ({
      seconds: 300,
      requests: requestsPerMinute * 5,
      requestsPerMinute,
      latencyMs: { p50, p99 },
    });
    expect(recentLine(recent(62.4, 12, 350))).toEqual({ rate: '62', latency: '12 ms / 350 ms' });
    expect(recentLine(recent(0.4, 4.5, 4.5))).toEqual({ rate: '0.4', latency: '4.5 ms / 4.5 ms' });
    expect(recentLine(recent(0, null, null))).toEqual({ rate: '0', latency: '-' });
    expect(recentLine(null)).toEqual({ rate: '-', latency: '-' });
  });
});

describe('trafficWindowLine', () => {
  const when = (iso: string) => iso.slice(0, 16);
  const since = '2026-11-26T10:00:00.000Z';

  it('says since when, and with several replicas through which one (the rest is every replica)', () => {
    expect(trafficWindowLine({ since, seconds: 60, replica: null }, when)).toBe('since 2026-11-26T10:00');
    expect(trafficWindowLine({ since, seconds: 60, replica: 'rep-a1' }, when)).toBe(
      'through replica rep-a1 since 2026-11-26T10:00; queue, in flight and charts: every replica',
    );
  });

  it('is empty without a window, and a server before replica ids reads as one process', () => {
    expect(trafficWindowLine(null, when)).toBe('');
    expect(trafficWindowLine(undefined, when)).toBe('');
    const older = { since, seconds: 60 } as unknown as NonNullable<Parameters<typeof trafficWindowLine>[0]>;
    expect(trafficWindowLine(older, when)).toBe('since 2026-11-26T10:00');
  });
});
