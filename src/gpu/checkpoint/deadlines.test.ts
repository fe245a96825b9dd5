import { describe, expect, it } from 'vitest';
import { checkpointDeadlines } from './deadlines.js';

const GB = 1024 ** 3;

describe('the deadlines of a suspend and a resume', () => {
  it.each([
    [0, 20_000, 20_000],
    [2 * GB, 22_800, 21_000],
    [40 * GB, 76_000, 40_000],
    [-1, 20_000, 20_000],
  ])('for %d bytes: suspend %d ms, resume %d ms', (bytes, suspendMs, resumeMs) => {
    expect(checkpointDeadlines(bytes)).toEqual({ suspendMs, resumeMs });
  });

  it("leave three times the H200's own times (40 GB: checkpoint 18.2 s, restore and first answer 6.2 s)", () => {
    const { suspendMs, resumeMs } = checkpointDeadlines(40 * GB);
    expect(suspendMs - 20_000).toBeGreaterThanOrEqual(3 * 18_200);
    expect(resumeMs - 20_000).toBeGreaterThanOrEqual(3 * 6_200);
  });
});
