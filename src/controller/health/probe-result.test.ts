import { describe, expect, it } from 'vitest';
import { type ProbeResult, probeFailureCause, probePassed } from './probe-result.js';

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
