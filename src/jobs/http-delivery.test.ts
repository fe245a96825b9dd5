import { describe, expect, it } from 'vitest';
import { answerToResult } from './http-delivery.js';

describe("an http endpoint's answer to a job", () => {
  it('is the output when it is 2xx JSON, and FAILS the job with the status and body otherwise', () => {
    expect(answerToResult(200, '{"a":1}')).toEqual({ status: 'COMPLETED', output: '{"a":1}', error: null });
    expect(answerToResult(201, '"x"')).toEqual({ status: 'COMPLETED', output: '"x"', error: null });
    expect(answerToResult(200, 'plain text')).toEqual({
      status: 'FAILED',
      output: null,
      error: 'HTTP 200: the answer is not JSON: plain text',
    });
    expect(answerToResult(503, '{"reason":"NO_CAPACITY"}')).toEqual({
      status: 'FAILED',
      output: null,
      error: 'HTTP 503: {"reason":"NO_CAPACITY"}',
    });
    expect(answerToResult(500, 'x'.repeat(10_000)).error?.length).toBe('HTTP 500: '.length + 4_096);
  });
});
