import { describe, expect, it } from 'vitest';
import { GpuLedger } from './gpu-ledger.js';

describe('GpuLedger', () => {
  const held = (ledger: GpuLedger, workers: { id: string; gpuUuids: string[] }[] = []) =>
    Object.fromEntries(ledger.held(workers));

  it.each([
    {
      case: 'a worker record holds its own GPUs',
      steps: (_: GpuLedger) => {},
      workers: [{ id: 'w1', gpuUuids: ['g0', 'g1'] }],
      expected: { g0: 'w1', g1: 'w1' },
    },
    {
      case: 'a create under way holds its GPUs without a record',
      steps: (l: GpuLedger) => l.createStarted('w1', ['g0']),
      workers: [],
      expected: { g0: 'w1' },
    },
    {
      case: 'a create that ended holds nothing of its own',
      steps: (l: GpuLedger) => {
        l.createStarted('w1', ['g0']);
        l.createEnded('w1');
      },
      workers: [],
      expected: {},
    },
    {
      case: 'a container being removed holds its GPUs after its record is gone',
      steps: (l: GpuLedger) => l.releaseStarted('w1', ['g2']),
      workers: [],
      expected: { g2: 'w1' },
    },
    {
      case: 'a failed removal still holds them',
      steps: (l: GpuLedger) => {
        l.releaseStarted('w1', ['g2']);
        l.releaseFailed('w1');
      },
      workers: [],
      expected: { g2: 'w1' },
    },
    {
      case: 'a finished removal frees them',
      steps: (l: GpuLedger) => {
        l.releaseStarted('w1', ['g2']);
        l.released('w1');
      },
      workers: [],
      expected: {},
    },
  ])('$case', ({ steps, workers, expected }) => {
    const ledger = new GpuLedger();
    steps(ledger);
    expect(held(ledger, workers)).toEqual(expected);
  });

  it('names failed removals to retry, not those in flight', () => {
    const ledger = new GpuLedger();
    ledger.releaseStarted('w-running', ['g0']);
    ledger.releaseStarted('w-failed', ['g1']);
    ledger.releaseFailed('w-failed');
    expect(ledger.toRetry()).toEqual([['w-failed', ['g1']]]);
    expect(ledger.isReleasing('w-running')).toBe(true);
    // Retrying puts it back in flight.
    ledger.releaseStarted('w-failed', ['g1']);
    expect(ledger.toRetry()).toEqual([]);
  });

  it('keeps its own copy of the GPUs it is given', () => {
    const ledger = new GpuLedger();
    const gpus = ['g0'];
    ledger.createStarted('w1', gpus);
    gpus.push('g1');
    expect(held(ledger)).toEqual({ g0: 'w1' });
    expect(ledger.isCreating('w1')).toBe(true);
  });
});
