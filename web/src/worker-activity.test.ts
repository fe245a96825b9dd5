import { describe, expect, it } from 'vitest';
import { emptyChartsLine, restingLine, workersActivity } from './worker-activity.js';

const worker = (state: string, message = '') => ({ state: { state, error: '', message } });

describe("the Endpoint page's empty states", () => {
  it('never say "no workers" while a worker is starting, pulling, waiting for a GPU or frozen', () => {
    for (const state of ['starting', 'pulling', 'pending', 'frozen', 'suspended']) {
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
