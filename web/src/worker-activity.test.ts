import { describe, expect, it } from 'vitest';
import { emptyChartsLine, restingLine, stateCause, workersActivity } from './worker-activity.js';

const worker = (state: string, message = '') => ({ state: { state, error: '', message } });

describe("the Endpoint page's empty states", () => {
  it('never say "no workers" while a worker is starting, pulling, waiting for a GPU or frozen', () => {
    for (const state of ['downloading', 'starting', 'pulling', 'pending', 'frozen', 'suspended']) {
      expect(workersActivity([worker(state)], 0)).not.toMatch(/no workers/);
      expect(emptyChartsLine([worker(state)], 0)).not.toMatch(/no workers|no traffic/);
    }
  });

  it('say what the workers are doing, with what the first of each state says, slowest step first', () => {
    const workers = [
      worker('starting', 'health check GET /health answered 404'),
      worker('starting'),
      worker('pending', 'needs 1 GPU of h100-80g, 0 free'),
      worker('failed', 'exited with code 1'),
    ];
    expect(workersActivity(workers, 1)).toBe(
      '1 worker waiting for a GPU: needs 1 GPU of h100-80g, 0 free; 2 workers starting: health check GET /health answered 404',
    );
    expect(emptyChartsLine([worker('pulling', 'pulling app:1: 42% (120/285 MB)')], 0)).toBe(
      '1 worker pulling its image: pulling app:1: 42% (120/285 MB); the charts begin at the next sample',
    );
    expect(
      workersActivity(
        [
          worker('pending'),
          worker('downloading', 'model acme/tiny-llm: 3.2 of 14.9 GB, 410 MB/s, about 29 s left'),
        ],
        1,
      ),
    ).toBe(
      '1 worker downloading its models: model acme/tiny-llm: 3.2 of 14.9 GB, 410 MB/s, about 29 s left; 1 worker waiting for a GPU',
    );
    expect(workersActivity([worker('frozen')], 0)).toBe(
      '1 worker frozen (a request thaws it in milliseconds)',
    );
  });

  it('say "no workers" only when none is there, failed and stopped ones being gone', () => {
    expect(workersActivity([], 1)).toBe('no workers');
    expect(workersActivity([worker('failed'), worker('stopped')], 0)).toBe(
      'no workers: the next request or job starts one',
    );
    expect(emptyChartsLine([], 0)).toBe(
      'no traffic and no jobs yet, and no workers: the next request or job starts one',
    );
  });
});

describe('the workers resting in a tier', () => {
  it('are counted by tier, apart from the ready ones', () => {
    expect(restingLine([worker('frozen'), worker('suspended'), worker('frozen'), worker('running')])).toBe(
      '2 frozen, 1 suspended',
    );
    expect(restingLine([worker('running')])).toBe('');
  });
});

describe("the Endpoints list's cause", () => {
  const endpoint = (
    state: string,
    message: string,
    workers: { id: string; state: { state: string; error: string; message: string } }[],
  ) => ({
    state: { state, message },
    workers,
  });

  it('says the cause a starting worker gives beside "deploying · 1 starting"', () => {
    const starting = {
      id: 'w-1',
      ...worker('starting', 'health check GET /health answered 404 Not Found (3 in a row)'),
    };
    expect(stateCause(endpoint('deploying', '1 starting', [starting]))).toBe(
      'worker w-1: health check GET /health answered 404 Not Found (3 in a row)',
    );
  });

  it("says a downloading worker's progress beside the endpoint's state", () => {
    const downloading = {
      id: 'w-1',
      ...worker('downloading', 'model acme/tiny-llm: 0.1 of 0.2 GB, 12 MB/s, about 8 s left'),
    };
    expect(stateCause(endpoint('deploying', '1 downloading', [downloading]))).toBe(
      'worker w-1: model acme/tiny-llm: 0.1 of 0.2 GB, 12 MB/s, about 8 s left',
    );
  });

  it("puts an unhealthy or failed worker's cause first, and a failed one's only while not serving", () => {
    const workers = [
      { id: 'w-1', ...worker('starting', 'waiting for /health to answer') },
      { id: 'w-2', ...worker('failed', 'exited with code 1') },
    ];
    expect(stateCause(endpoint('deploying', '1 starting', workers))).toBe('worker w-2: exited with code 1');
    expect(stateCause(endpoint('serving', '1 running', [workers[1] as (typeof workers)[0]]))).toBe('');
  });

  it("says nothing the endpoint's message already says, or without a message", () => {
    const pending = { id: 'w-1', ...worker('pending', 'needs 1 GPU of h100-80g, 0 free') };
    expect(stateCause(endpoint('deploying', '1 pending (needs 1 GPU of h100-80g, 0 free)', [pending]))).toBe(
      '',
    );
    expect(stateCause(endpoint('deploying', '1 starting', [{ id: 'w-1', ...worker('starting') }]))).toBe('');
  });
});
