/** Tests for forwarding.ts: whether a gateway forwards an endpoint's requests, and to which replica. */
import { describe, expect, it } from 'vitest';
import { forwardTarget } from './forwarding.js';
import { shareOf } from './slot-shares.js';

const URLS = new Map([
  ['a', 'http://10.0.0.1:8000'],
  ['b', 'http://10.0.0.2:8000'],
  ['c', 'http://10.0.0.3:8000'],
]);

/** A worker id whose one slot (capacity 1) goes to `owner` among a, b, c; `nth` picks another such id. */
function workerOwnedBy(owner: string, nth = 0): string {
  let seen = 0;
  for (let i = 0; ; i++) {
    const id = `w-${i}`;
    if (shareOf(1, ['a', 'b', 'c'], owner, id) === 1 && seen++ === nth) return id;
  }
}

describe('forwardTarget', () => {
  const toB = workerOwnedBy('b');
  const toC = workerOwnedBy('c');
  const toA = workerOwnedBy('a');
  const cases: {
    name: string;
    self: string;
    members: string[] | undefined;
    workers: { id: string; slots: number }[];
    capacity: number;
    urls?: Map<string, string>;
    expected: string | undefined;
  }[] = [
    {
      name: 'no routable worker: queue locally (wake from zero)',
      self: 'a',
      members: ['a', 'b'],
      workers: [],
      capacity: 1,
      expected: undefined,
    },
    {
      name: 'one replica',
      self: 'a',
      members: ['a'],
      workers: [{ id: toA, slots: 1 }],
      capacity: 1,
      expected: undefined,
    },
    {
      name: 'a slot here',
      self: 'a',
      members: ['a', 'b', 'c'],
      workers: [
        { id: toA, slots: 1 },
        { id: toB, slots: 0 },
      ],
      capacity: 1,
      expected: undefined,
    },
    {
      name: 'no slot here: to the replica holding it',
      self: 'a',
      members: ['a', 'b', 'c'],
      workers: [{ id: toB, slots: 0 }],
      capacity: 1,
      expected: 'b',
    },
    {
      name: 'no slot here: to the other holder',
      self: 'a',
      members: ['a', 'b', 'c'],
      workers: [{ id: toC, slots: 0 }],
      capacity: 1,
      expected: 'c',
    },
    {
      name: 'the most slots wins',
      self: 'a',
      members: ['a', 'b', 'c'],
      workers: [
        { id: toB, slots: 0 },
        { id: toC, slots: 0 },
        { id: workerOwnedBy('c', 1), slots: 0 },
      ],
      capacity: 1,
      expected: 'c',
    },
    {
      name: 'a tie goes to the smallest id',
      self: 'a',
      members: ['a', 'b', 'c'],
      workers: [
        { id: toB, slots: 0 },
        { id: toC, slots: 0 },
      ],
      capacity: 1,
      expected: 'b',
    },
    {
      name: 'a holder without a gateway URL is skipped',
      self: 'a',
      members: ['a', 'b', 'c'],
      workers: [
        { id: toB, slots: 0 },
        { id: toC, slots: 0 },
      ],
      capacity: 1,
      urls: new Map([['c', 'http://10.0.0.3:8000']]),
      expected: 'c',
    },
    {
      name: 'no holder reachable',
      self: 'a',
      members: ['a', 'b', 'c'],
      workers: [{ id: toB, slots: 0 }],
      capacity: 1,
      urls: new Map(),
      expected: undefined,
    },
    {
      name: 'shares expired (no membership): no forwarding',
      self: 'a',
      members: undefined,
      workers: [{ id: toB, slots: 0 }],
      capacity: 1,
      expected: undefined,
    },
    {
      name: 'this replica still waits for its grown share: the others hold slots',
      self: 'a',
      members: ['a', 'b'],
      workers: [{ id: 'w', slots: 0 }],
      capacity: 2,
      expected: 'b',
    },
  ];
  it.each(cases)('$name', ({ self, members, workers, capacity, urls, expected }) => {
    const target = forwardTarget({ self, members, gatewayUrls: urls ?? URLS, workers, capacity });
    expect(target?.replicaId).toBe(expected);
    if (expected !== undefined) expect(target?.url).toBe((urls ?? URLS).get(expected));
  });
});
