/**
 * A replica's traffic marks: nothing written per request, one write per flush with each endpoint's newest mark, and
 * a flush the store refuses keeps its marks for the next one.
 */
import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { TrafficMarks } from './traffic-marks.js';

describe('TrafficMarks', () => {
  it('writes each endpoint’s newest mark once per flush, and keeps the marks of a refused write', async () => {
    const timers = new ManualTimers(0);
    const writes: [string, number][][] = [];
    let refuse = false;
    const warnings: string[] = [];
    const marks = new TrafficMarks({
      activity: {
        recordTraffic: async (m) => {
          if (refuse) throw new Error('database down');
          writes.push([...m]);
        },
      },
      timers,
      flushMs: 1000,
      logger: { warn: (_fields, message) => warnings.push(message) },
    });
    marks.mark('a', 10);
    marks.mark('a', 30);
    marks.mark('a', 20);
    marks.mark('b', 5);
    expect(writes).toEqual([]);
    timers.advance(1000);
    await marks.settled();
    expect(writes).toEqual([
      [
        ['a', 30],
        ['b', 5],
      ],
    ]);
    // Nothing new: the next flush writes nothing.
    timers.advance(1000);
    await marks.settled();
    expect(writes).toHaveLength(1);
    refuse = true;
    marks.mark('c', 40);
    timers.advance(1000);
    await marks.settled();
    expect(warnings).toEqual(["could not write the endpoints' last traffic"]);
    refuse = false;
    marks.mark('c', 35);
    await marks.close();
    expect(writes.at(-1)).toEqual([['c', 40]]);
    // Closed: no timer left.
    expect(timers.count).toBe(0);
  });
});
