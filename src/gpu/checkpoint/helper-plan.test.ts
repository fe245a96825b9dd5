import { describe, expect, it } from 'vitest';
import { resumeCalls, suspendCalls } from './helper-plan.js';

describe('the calls of suspend and resume', () => {
  it.each([
    [0, ['lock', 'checkpoint']],
    [1, ['checkpoint']],
    [2, []],
    [3, undefined],
  ])('suspend from CUprocessState %i: %j', (state, calls) => {
    expect(suspendCalls(state)).toEqual(calls);
  });

  it.each([
    [2, ['restore', 'unlock']],
    [1, ['unlock']],
    [0, []],
    [3, undefined],
  ])('resume from CUprocessState %i: %j', (state, calls) => {
    expect(resumeCalls(state)).toEqual(calls);
  });
});
