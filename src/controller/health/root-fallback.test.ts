import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../../test/support/manual-timers.js';
import { DEFAULT_HEALTH, type HealthCheck } from '../../domain/endpoint.js';
import { HealthProber, type ProbeTarget } from './health-prober.js';
import { answered } from './probe-result.js';

const check: HealthCheck = { path: '/health', ...DEFAULT_HEALTH };
const address = { host: '127.0.0.1', port: 9000 };

/** One worker whose app answers `statuses[path]` (404 where it has no entry), probed once. */
async function probeOnce(statuses: Record<string, number>, rootFallback: boolean) {
  const timers = new ManualTimers();
  const asked: string[] = [];
  const seen: { healthy: boolean; cause: string | undefined }[] = [];
  const target: ProbeTarget = {
    address,
    check,
    appPort: 80,
    fast: true,
    ...(rootFallback ? { rootFallback: true } : {}),
  };
  const prober = new HealthProber({
    timers,
    startingIntervalMs: 50,
    probe: async (_, path) => {
      asked.push(path);
      return answered(statuses[path] ?? 404);
    },
    target: () => target,
    onResult: (_, healthy, _flipped, cause) => seen.push({ healthy, cause }),
  });
  prober.schedule('w1', 0);
  await timers.advanceSettling(0);
  prober.close();
  return { asked, result: seen[0] };
}

describe('the default health path falls back to /', () => {
  it('passes a stock web server that answers 404 on /health and 200 on / (the README first example)', async () => {
    const { asked, result } = await probeOnce({ '/': 200 }, true);
    expect(asked).toEqual(['/health', '/']);
    expect(result).toEqual({ healthy: true, cause: undefined });
  });

  it('passes any answer of / below 500 (an API with no page at /), and names both answers above', async () => {
    expect((await probeOnce({}, true)).result).toEqual({ healthy: true, cause: undefined });
    expect((await probeOnce({ '/': 502 }, true)).result).toEqual({
      healthy: false,
      cause: 'HTTP 404 from /health, HTTP 502 from /',
    });
  });

  it('asks / only after a 404: a 503 from /health is the app saying it is not ready', async () => {
    const { asked, result } = await probeOnce({ '/health': 503, '/': 200 }, true);
    expect(asked).toEqual(['/health']);
    expect(result).toEqual({ healthy: false, cause: 'HTTP 503 from /health' });
  });

  it('never asks / for a path the owner named', async () => {
    const { asked, result } = await probeOnce({ '/': 200 }, false);
    expect(asked).toEqual(['/health']);
    expect(result).toEqual({ healthy: false, cause: 'HTTP 404 from /health' });
  });
});
