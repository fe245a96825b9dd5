import { describe, expect, it } from 'vitest';
import { HistoryRing } from './history-ring.js';

describe('HistoryRing', () => {
  it('keeps the last `capacity` samples, oldest first, each column beside its time', () => {
    const ring = new HistoryRing({ capacity: 3, columns: 2 });
    expect(ring.read()).toEqual({ times: [], columns: [[], []] });
    expect(ring.latest()).toBeUndefined();
    for (let i = 1; i <= 5; i++) ring.push(i * 1000, [i, i * 10]);
    expect(ring.size).toBe(3);
    expect(ring.read()).toEqual({
      times: [3000, 4000, 5000],
      columns: [
        [3, 4, 5],
        [30, 40, 50],
      ],
    });
    expect(ring.read(2)).toEqual({
      times: [4000, 5000],
      columns: [
        [4, 5],
        [40, 50],
      ],
    });
    expect(ring.read(99).times).toEqual([3000, 4000, 5000]);
    expect(ring.latest()).toBe(5000);
  });

  it('keeps NaN for a figure without a value and for one not given', () => {
    const ring = new HistoryRing({ capacity: 2, columns: 3 });
    ring.push(1, [1, Number.NaN]);
    const [a, b, c] = ring.read().columns;
    expect(a).toEqual([1]);
    expect(b?.[0]).toBeNaN();
    expect(c?.[0]).toBeNaN();
  });

  it('takes a fixed number of bytes, stated before it is made', () => {
    const ring = new HistoryRing({ capacity: 360, columns: 19 });
    expect(ring.bytes).toBe(360 * (8 + 19 * 4));
    expect(HistoryRing.bytesFor(360, 19)).toBe(ring.bytes);
    for (let i = 0; i < 1000; i++) ring.push(i, [i]);
    expect(ring.bytes).toBe(360 * (8 + 19 * 4));
  });

  it('refuses a ring without room for a sample', () => {
    expect(() => new HistoryRing({ capacity: 0, columns: 1 })).toThrow(RangeError);
  });
});
