import { describe, expect, it } from 'vitest';
import { isWorkerToken, WorkerTokens } from './worker-tokens.js';

describe('worker tokens', () => {
  const tokens = new WorkerTokens({ secret: 'server-secret' });

  it("verify only for their own endpoint and worker, raw or Bearer, under the server's secret", () => {
    const token = tokens.issue('ep-1', 'w-1');
    expect(isWorkerToken(token)).toBe(true);
    expect(tokens.verify(token, 'ep-1', 'w-1')).toBe(true);
    expect(tokens.verify(`Bearer ${token}`, 'ep-1', 'w-1')).toBe(true);
    expect(tokens.verify(token, 'ep-2', 'w-1')).toBe(false);
    expect(tokens.verify(token, 'ep-1', 'w-2')).toBe(false);
    expect(new WorkerTokens({ secret: 'other' }).verify(token, 'ep-1', 'w-1')).toBe(false);
    expect(tokens.verify('sk_abcdefghijkl_ABCDEFGHIJKLMNOPQRSTUVWXYZ012345', 'ep-1', 'w-1')).toBe(false);
    expect(tokens.verify(undefined, 'ep-1', 'w-1')).toBe(false);
  });

  it('remember the tokens they verified, up to a bound, and still refuse one for another worker', () => {
    const bounded = new WorkerTokens({ secret: 'server-secret', maxVerified: 2 });
    const token = bounded.issue('ep-1', 'w-1');
    expect(bounded.verify(token, 'ep-1', 'w-1')).toBe(true);
    expect(bounded.verify(`Bearer ${token}`, 'ep-1', 'w-1')).toBe(true);
    expect(bounded.remembered).toBe(1);
    expect(bounded.verify(token, 'ep-1', 'w-2')).toBe(false);
    expect(bounded.verify(token, 'ep-2', 'w-1')).toBe(false);
    expect(bounded.verify(`${token}x`, 'ep-1', 'w-1')).toBe(false);
    expect(bounded.remembered).toBe(1);
    for (const w of ['w-2', 'w-3']) expect(bounded.verify(bounded.issue('ep-1', w), 'ep-1', w)).toBe(true);
    expect(bounded.remembered).toBe(2);
    expect(bounded.verify(token, 'ep-1', 'w-1')).toBe(true);
  });
});
