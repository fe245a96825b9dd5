/** The GPUs' holders and the placed or waiting workers, as a follower reads them from the `workers` rows. */
import { describe, expect, it } from 'vitest';
import type { Worker, WorkerState } from '../domain/worker.js';
import { gpuHoldsOf } from './gpu-holds.js';

function row(id: string, state: WorkerState, gpuUuids: string[], createdAt: number, message = ''): Worker {
  return {
    id,
    endpointId: `ep-${id}`,
    ownerId: 'owner-a',
    revision: 1,
    status: { state, error: state === 'failed' ? 'RUNTIME_ERROR' : '', message },
    healthy: state === 'running',
    gpuUuids,
    address: null,
    createdAt,
    updatedAt: createdAt,
    readyAt: null,
  };
}

describe('gpuHoldsOf', () => {
  it.each<{ case: string; rows: Worker[]; held: [string, string][] }>([
    { case: 'no rows: nothing held', rows: [], held: [] },
    {
      case: 'a placed worker holds its GPUs from pulling on',
      rows: [row('w1', 'pulling', ['GPU-0', 'GPU-1'], 1)],
      held: [
        ['GPU-0', 'w1'],
        ['GPU-1', 'w1'],
      ],
    },
    {
      case: 'every state with GPUs holds them: running, unhealthy, draining, stopped (its container not removed yet)',
      rows: [
        row('w1', 'running', ['GPU-0'], 1),
        row('w2', 'unhealthy', ['GPU-1'], 2),
        row('w3', 'draining', ['GPU-2'], 3),
        row('w4', 'stopped', ['GPU-3'], 4),
      ],
      held: [
        ['GPU-0', 'w1'],
        ['GPU-1', 'w2'],
        ['GPU-2', 'w3'],
        ['GPU-3', 'w4'],
      ],
    },
    {
      case: 'a failed worker holds its GPUs until its container is gone, then its row names none',
      rows: [row('w1', 'failed', ['GPU-0'], 1), row('w2', 'failed', [], 2)],
      held: [['GPU-0', 'w1']],
    },
    {
      case: 'a pending worker holds nothing',
      rows: [row('w1', 'pending', [], 1, 'needs 2 GPUs of h100-80g; 1 free')],
      held: [],
    },
    {
      case: "two rows name one GPU (a deposed leader's row not cleared yet): the newer worker holds it",
      rows: [row('new', 'starting', ['GPU-0'], 5), row('old', 'running', ['GPU-0', 'GPU-1'], 1)],
      held: [
        ['GPU-0', 'new'],
        ['GPU-1', 'old'],
      ],
    },
    {
      case: 'created at the same time: the greater id is the newer, as the rows are read (created_at, id)',
      rows: [row('b', 'running', ['GPU-0'], 1), row('a', 'running', ['GPU-0'], 1)],
      held: [['GPU-0', 'b']],
    },
  ])('$case', ({ rows, held }) => {
    expect([...gpuHoldsOf(rows).held].sort()).toEqual([...held].sort());
  });

  it('lists every row as a placed worker, oldest first, with its state, message, GPUs and creation time', () => {
    const holds = gpuHoldsOf([
      row('w2', 'pending', [], 20, 'needs 1 GPU of h100-80g; none free'),
      row('w1', 'running', ['GPU-0'], 10),
    ]);
    expect(holds.workers).toEqual([
      {
        id: 'w1',
        endpointId: 'ep-w1',
        ownerId: 'owner-a',
        state: 'running',
        message: '',
        gpuUuids: ['GPU-0'],
        createdAt: 10,
      },
      {
        id: 'w2',
        endpointId: 'ep-w2',
        ownerId: 'owner-a',
        state: 'pending',
        message: 'needs 1 GPU of h100-80g; none free',
        gpuUuids: [],
        createdAt: 20,
      },
    ]);
  });
});
