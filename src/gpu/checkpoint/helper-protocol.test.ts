import { describe, expect, it } from 'vitest';
import { isHelperOp, parseHelperAnswer } from './helper-protocol.js';

describe("the helper's answer", () => {
  it('is the last JSON line with ok, after whatever else was printed', () => {
    const stdout = [
      'a warning from the driver',
      '{"not":"an answer"}',
      '{"ok":true,"op":"state","steps":[{"call":"cuInit","ms":1}],"state":2}',
      '',
    ].join('\n');
    expect(parseHelperAnswer(stdout)).toEqual({
      ok: true,
      op: 'state',
      steps: [{ call: 'cuInit', ms: 1 }],
      state: 2,
    });
  });

  it('is undefined when no line is one (a crash, a cut line)', () => {
    expect(parseHelperAnswer('')).toBeUndefined();
    expect(parseHelperAnswer('{"ok":tr')).toBeUndefined();
    expect(parseHelperAnswer('Segmentation fault\n')).toBeUndefined();
  });

  it('knows its operations', () => {
    expect(isHelperOp('suspend')).toBe(true);
    expect(isHelperOp('freeze')).toBe(false);
  });
});
