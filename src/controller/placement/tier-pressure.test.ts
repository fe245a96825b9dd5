import { describe, expect, it } from 'vitest';
import { chooseEvictions, type EvictionInput, overBudget } from './tier-pressure.js';

/** A placement over plain GPUs: each waiting worker takes `need` GPUs among those neither held nor taken. */
function placesWith(
  gpus: string[],
  held: Set<string>,
  waiting: { workerId: string; need: number }[],
): EvictionInput['placedWith'] {
  return (freed) => {
    const free = gpus.filter((g) => !held.has(g) || freed.has(g));
    const placed = new Map<string, string[]>();
    for (const w of waiting) {
      if (free.length < w.need) continue;
      placed.set(w.workerId, free.splice(0, w.need));
    }
    return placed;
  };
}

describe('chooseEvictions (GPU pressure on frozen workers, pure)', () => {
  const gpus = ['g0', 'g1', 'g2'];
  const holders = [
    { workerId: 'newest', endpointId: 'a', gpuUuids: ['g0'], tierSince: 300 },
    { workerId: 'oldest', endpointId: 'b', gpuUuids: ['g1'], tierSince: 100 },
    { workerId: 'middle', endpointId: 'c', gpuUuids: ['g2'], tierSince: 200 },
  ];
  const held = new Set(gpus);

  it.each([
    [
      'one GPU wanted: the oldest idle goes, for the worker that gets its GPU',
      [{ workerId: 'x', endpointId: 'x-ep', need: 1 }],
      [{ workerId: 'oldest', forWorkerId: 'x', forEndpointId: 'x-ep' }],
    ],
    [
      'two GPUs wanted: the two oldest',
      [{ workerId: 'x', endpointId: 'x-ep', need: 2 }],
      [
        { workerId: 'oldest', forWorkerId: 'x', forEndpointId: 'x-ep' },
        { workerId: 'middle', forWorkerId: 'x', forEndpointId: 'x-ep' },
      ],
    ],
    [
      'more than the machine has: nobody is moved down for nothing',
      [{ workerId: 'x', endpointId: 'x-ep', need: 4 }],
      [],
    ],
    [
      "a waiting worker's own endpoint's frozen worker is not taken for it",
      [{ workerId: 'x', endpointId: 'b', need: 1 }],
      [{ workerId: 'middle', forWorkerId: 'x', forEndpointId: 'b' }],
    ],
  ] as const)('%s', (_what, waiting, evictions) => {
    const input: EvictionInput = {
      waiting: waiting.map(({ workerId, endpointId }) => ({ workerId, endpointId })),
      holders,
      placedWith: placesWith(gpus, held, [...waiting]),
    };
    expect(chooseEvictions(input)).toEqual(evictions);
  });

  it('GPUs coming free already (an earlier eviction) are counted: no second victim', () => {
    const waiting = [{ workerId: 'x', endpointId: 'x-ep', need: 1 }];
    expect(
      chooseEvictions({
        waiting: [{ workerId: 'x', endpointId: 'x-ep' }],
        holders: holders.filter((h) => h.workerId !== 'oldest'),
        comingFree: new Set(['g1']),
        placedWith: placesWith(gpus, held, waiting),
      }),
    ).toEqual([]);
  });

  it('nobody waits, or nobody rests: nothing', () => {
    expect(chooseEvictions({ waiting: [], holders, placedWith: () => new Map() })).toEqual([]);
    expect(
      chooseEvictions({
        waiting: [{ workerId: 'x', endpointId: 'e' }],
        holders: [],
        placedWith: () => new Map(),
      }),
    ).toEqual([]);
  });
});

describe('overBudget (suspended workers past the host memory budget, pure)', () => {
  const suspended = [
    { workerId: 'new', hostBytes: 40, tierSince: 300 },
    { workerId: 'old', hostBytes: 30, tierSince: 100 },
    { workerId: 'mid', hostBytes: 20, tierSince: 200 },
  ];
  it.each([
    [90, []],
    [89, ['old']],
    [60, ['old']],
    [59, ['old', 'mid']],
    [0, ['old', 'mid', 'new']],
  ] as const)('a budget of %d bytes stops %j, oldest first', (budget, stopped) => {
    expect(overBudget(suspended, budget)).toEqual(stopped);
  });
});
