import { describe, expect, it } from 'vitest';
import { serverTiming, wakeHeaders } from './server-timing.js';

describe('Server-Timing of an answer that waited for a wake', () => {
  it.each([
    [
      'a thaw',
      { tier: 'thaw', phases: [{ name: 'thaw', ms: 3.21 }], at: 1_050 },
      'queue;dur=50, thaw;dur=3.2',
    ],
    [
      'a restore',
      { tier: 'restore', phases: [{ name: 'restore', ms: 690 }], at: 1_050 },
      'queue;dur=50, restore;dur=690',
    ],
    [
      'a cold start',
      {
        tier: 'cold',
        phases: [
          { name: 'placement', ms: 1 },
          { name: 'pull', ms: 0 },
          { name: 'create', ms: 420 },
          { name: 'ready', ms: 10_000 },
        ],
        at: 1_050,
      },
      'queue;dur=50, placement;dur=1, pull;dur=0, create;dur=420, ready;dur=10000',
    ],
    [
      'a wake before it arrived (not paid by it)',
      { tier: 'thaw', phases: [{ name: 'thaw', ms: 3 }], at: 999 },
      'queue;dur=50',
    ],
    ['no wake known (another replica woke it)', undefined, 'queue;dur=50'],
  ] as const)('%s', (_what, wake, header) => {
    expect(serverTiming(50, wake as never, 1_000)).toBe(header);
  });
});

describe('the wake a diverted request waited for (served by another replica)', () => {
  const address = { host: '127.0.0.1', port: 9000 };
  const workers = [
    { id: 'w0', address },
    { id: 'w1', address, wake: { tier: 'thaw' as const, phases: [{ name: 'thaw', ms: 4 }], at: 900 } },
    { id: 'w2', address, wake: { tier: 'thaw' as const, phases: [{ name: 'thaw', ms: 7 }], at: 1_040 } },
  ];

  it('is the first routable worker woken since it arrived, with its queue wait here', () => {
    expect(wakeHeaders(60, workers, 1_000)).toEqual({
      'x-corral-cold-start-ms': '60',
      'server-timing': 'queue;dur=60, thaw;dur=7',
    });
    expect(wakeHeaders(60, workers.slice(0, 2), 1_000)).toEqual({
      'x-corral-cold-start-ms': '60',
      'server-timing': 'queue;dur=60',
    });
  });
});
