import { describe, expect, it } from 'vitest';
import { sampleEndpoint } from '../../../test/support/fixtures.js';
import { type Eviction, evictionEvents, forWhom } from './eviction-events.js';

const AT = Date.parse('2026-11-29T10:00:00Z');

function eviction(overrides: Partial<Eviction> = {}): Eviction {
  const a = { ...sampleEndpoint({ patch: { name: 'sdxl' } }), id: 'ep-a' };
  const b = { ...sampleEndpoint({ patch: { name: 'llama' } }), id: 'ep-b' };
  return {
    workerId: 'ep-a-w1',
    evicted: a,
    gpuUuids: ['GPU-0'],
    needed: b,
    neededBy: 'pending',
    outcome: 'stopped',
    at: AT,
    ...overrides,
  };
}

describe('the events of an eviction', () => {
  it("are in the evicted endpoint's events, naming the endpoint that needed its GPUs, and in that one's", () => {
    const e = eviction();
    expect(forWhom(e)).toBe('a worker of endpoint llama');
    expect(evictionEvents(e)).toEqual([
      [
        'ep-a',
        {
          at: AT,
          type: 'eviction',
          message: 'frozen worker ep-a-w1 stopped to free its GPUs for a worker of endpoint llama',
          data: { workerId: 'ep-a-w1', outcome: 'stopped', gpus: ['GPU-0'], forEndpointId: 'ep-b' },
        },
      ],
      [
        'ep-b',
        {
          at: AT,
          type: 'eviction',
          message:
            "frozen worker ep-a-w1 of endpoint sdxl stopped to free its GPUs for this endpoint's waiting worker",
          data: { workerId: 'ep-a-w1', outcome: 'stopped', gpus: ['GPU-0'], fromEndpointId: 'ep-a' },
        },
      ],
    ]);
  });

  it('say suspended, and a suspended worker waiting for its own GPUs, where so', () => {
    const [evicted, needed] = evictionEvents(eviction({ outcome: 'suspended', neededBy: 'suspended' }));
    expect(evicted?.[1].message).toBe(
      'frozen worker ep-a-w1 suspended to free its GPUs for a suspended worker of endpoint llama',
    );
    expect(needed?.[1].message).toBe(
      "frozen worker ep-a-w1 of endpoint sdxl suspended to free its GPUs for this endpoint's suspended worker",
    );
  });

  it("never name another owner's endpoint or worker", () => {
    const other = { ...sampleEndpoint({ ownerId: 'someone-else', patch: { name: 'llama' } }), id: 'ep-b' };
    const e = eviction({ needed: other });
    expect(forWhom(e)).toBe("a worker of another owner's endpoint");
    const [evicted, needed] = evictionEvents(e);
    expect(evicted?.[1]).toMatchObject({
      message: "frozen worker ep-a-w1 stopped to free its GPUs for a worker of another owner's endpoint",
      data: { forEndpointId: null },
    });
    expect(needed?.[1]).toMatchObject({
      message:
        "a frozen worker of another owner's endpoint stopped to free its GPUs for this endpoint's waiting worker",
      data: { workerId: null, fromEndpointId: null },
    });
    expect(JSON.stringify(needed)).not.toMatch(/sdxl|ep-a/);
    expect(JSON.stringify(evicted)).not.toMatch(/llama|ep-b/);
  });
});
