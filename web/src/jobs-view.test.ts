import { describe, expect, it } from 'vitest';
import { byteSize, canCancel, canRetry, countsLine, duration, shownText, statusLabel } from './jobs-view.js';

describe("the Jobs section's view", () => {
  it('offers cancel for queued and running jobs, retry for failed and timed-out ones', () => {
    expect(
      ['IN_QUEUE', 'IN_PROGRESS', 'COMPLETED', 'FAILED', 'CANCELLED', 'TIMED_OUT'].map((s) => [
        s,
        canCancel(s as never),
        canRetry(s as never),
      ]),
    ).toEqual([
      ['IN_QUEUE', true, false],
      ['IN_PROGRESS', true, false],
      ['COMPLETED', false, false],
      ['FAILED', false, true],
      ['CANCELLED', false, false],
      ['TIMED_OUT', false, true],
    ]);
  });

  it('writes durations, sizes and statuses for people', () => {
    expect(
      [undefined, 0, 850.4, 12_440, 185_000, 600_000, 3_900_000, 86_400_000].map((ms) => duration(ms)),
    ).toEqual(['-', '0 ms', '850 ms', '12.4 s', '3 min 5 s', '10 min', '1 h 5 min', '24 h']);
    expect([byteSize(812), byteSize(65_536), byteSize(20 * 1024 * 1024)]).toEqual([
      '812 B',
      '64.0 KiB',
      '20.0 MiB',
    ]);
    expect(statusLabel('TIMED_OUT')).toBe('timed out');
  });

  it('indents whole JSON, shows other text as it is, and marks a cut text with its full size', () => {
    expect(shownText({ text: '{"a":[1,2]}', bytes: 11, truncated: false })).toEqual({
      text: '{\n  "a": [\n    1,\n    2\n  ]\n}',
      note: undefined,
    });
    expect(shownText({ text: '{"a":', bytes: 5, truncated: false })).toEqual({
      text: '{"a":',
      note: undefined,
    });
    expect(shownText({ text: '{"prompt":"xxxx', bytes: 20 * 1024 * 1024, truncated: true })).toEqual({
      text: '{"prompt":"xxxx…',
      note: 'Truncated: the first 15 characters of 20.0 MiB.',
    });
  });

  it('says the counts in status order, leaving out the empty ones', () => {
    expect(countsLine({ COMPLETED: 12, IN_QUEUE: 3, FAILED: 0, IN_PROGRESS: 1 })).toBe(
      '3 queued, 1 in progress, 12 completed',
    );
    expect(countsLine({})).toBe('no jobs');
  });
});
