import { describe, expect, it } from 'vitest';
import { NO_CRASHES } from './backoff.js';
import { CrashLedger } from './crash-ledger.js';

const policy = { baseMs: 1000, capMs: 4000, crashLoopAfter: 3 };

describe('CrashLedger', () => {
  it('an endpoint without failures has none', () => {
    expect(new CrashLedger({ policy }).of('ep')).toEqual(NO_CRASHES);
  });

  it.each([
    { deaths: 1, code: 'RUNTIME_ERROR', retryAt: 1000 + 1000 },
    { deaths: 2, code: 'RUNTIME_ERROR', retryAt: 1000 + 2000 },
    { deaths: 3, code: 'CRASH_LOOP', retryAt: 1000 + 4000 },
    { deaths: 4, code: 'CRASH_LOOP', retryAt: 1000 + 4000 },
  ])(
    'after $deaths deaths in a row a worker is $code and the next waits until $retryAt',
    ({ deaths, code, retryAt }) => {
      const ledger = new CrashLedger({ policy });
      let last = '';
      for (let i = 0; i < deaths; i++) last = ledger.recordDeath('ep', 'exited with code 1', 1000);
      expect(last).toBe(code);
      expect(ledger.of('ep')).toMatchObject({ failures: deaths, retryAt, lastMessage: 'exited with code 1' });
    },
  );

  it('keeps endpoints apart, and a ready worker clears its own endpoint only', () => {
    const ledger = new CrashLedger({ policy });
    ledger.record('a', { code: 'IMAGE_PULL_FAILED', message: 'no such image', at: 0 });
    ledger.recordDeath('b', 'exited', 0);
    ledger.clear('b');
    expect(ledger.of('a')).toMatchObject({ failures: 1, lastCode: 'IMAGE_PULL_FAILED' });
    expect(ledger.of('b')).toEqual(NO_CRASHES);
  });

  it('a death after turning ready keeps counting until a worker has run healthy for resetAfterMs', () => {
    const ledger = new CrashLedger({ policy, resetAfterMs: 10_000 });
    ledger.recordDeath('ep', 'ran out of memory', 1000, true);
    ledger.settle('ep', 1, [{ state: 'running', readyAt: 4000 }], 5000);
    expect(ledger.of('ep').failures).toBe(1);
    ledger.settle('ep', 1, [{ state: 'running', readyAt: 4000 }], 14_000);
    expect(ledger.of('ep')).toEqual(NO_CRASHES);
  });

  it('a new revision starts with no failures', () => {
    const ledger = new CrashLedger({ policy });
    ledger.settle('ep', 1, [], 0);
    ledger.recordDeath('ep', 'exited', 0, true);
    ledger.settle('ep', 1, [], 1);
    expect(ledger.of('ep').failures).toBe(1);
    ledger.settle('ep', 2, [], 2);
    expect(ledger.of('ep')).toEqual(NO_CRASHES);
  });
});
