import { describe, expect, it } from 'vitest';
import { type ProbeResult, probeFailureCause, probePassed, queueProbeResult } from './probe-result.js';

const context = { path: '/health', port: 8000, timeoutMs: 2000 };
const error = (code: string, message = `${code} message`): ProbeResult => ({ kind: 'error', code, message });

describe('probeFailureCause', () => {
  it.each<[string, ProbeResult, string | undefined]>([
    ['200 passes', { kind: 'answered', status: 200 }, undefined],
    ['a redirect passes', { kind: 'answered', status: 302 }, undefined],
    ['404: the health path is wrong', { kind: 'answered', status: 404 }, 'HTTP 404 from /health'],
    ['503: the app says it is not ready', { kind: 'answered', status: 503 }, 'HTTP 503 from /health'],
    ['no answer within the timeout', { kind: 'timeout' }, 'no answer from /health within 2 s'],
    ['nothing listens on the port', error('ECONNREFUSED'), 'connection refused on port 8000'],
    [
      "Docker's port proxy finds nothing there",
      error('ECONNRESET'),
      'connection closed on port 8000 before any answer',
    ],
    ['closed while writing', error('EPIPE'), 'connection closed on port 8000 before any answer'],
    ['connect timed out', error('ETIMEDOUT'), 'no connection on port 8000 within 2 s'],
    ['no route', error('EHOSTUNREACH'), 'worker unreachable (EHOSTUNREACH) on port 8000'],
    ['not HTTP', error('HPE_INVALID_CONSTANT'), 'no valid HTTP answer on port 8000 (HPE_INVALID_CONSTANT)'],
    [
      'another error code',
      error('EMFILE', 'too many open files'),
      'probe on port 8000 failed: EMFILE: too many open files',
    ],
    ['an error without a code', error('', 'boom'), 'probe on port 8000 failed: boom'],
  ])('%s', (_why, result, cause) => {
    expect(probeFailureCause(result, context)).toBe(cause);
    expect(probePassed(result)).toBe(cause === undefined);
  });

  it('says sub-second timeouts as they are', () => {
    expect(probeFailureCause({ kind: 'timeout' }, { ...context, timeoutMs: 500 })).toBe(
      'no answer from /health within 0.5 s',
    );
  });
});

describe('queueProbeResult', () => {
  it('a queue worker that polled lately passes', () => {
    expect(probePassed(queueProbeResult({ healthy: true }))).toBe(true);
  });

  it('one that never polled fails, saying so', () => {
    expect(queueProbeResult({ healthy: false, reason: 'never-polled' })).toEqual({
      kind: 'error',
      code: 'NO_POLL',
      message: 'the worker has not polled for a job yet',
    });
  });

  it('one silent too long fails, saying for how long in seconds', () => {
    const result = queueProbeResult({ healthy: false, reason: 'silent', silentMs: 61_400 });
    expect(probePassed(result)).toBe(false);
    expect(result).toEqual({
      kind: 'error',
      code: 'NO_PING',
      message: 'no poll or ping from the worker for 61 s',
    });
  });
});
