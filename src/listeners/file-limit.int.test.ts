import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { describe, expect, it, vi } from 'vitest';
import { parseFileLimit, raiseFileLimit, readFileLimit } from './file-limit.js';

const LIMITS = `Limit                     Soft Limit           Hard Limit           Units
Max cpu time              unlimited            unlimited            seconds
Max open files            1024                 524288               files
Max locked memory         8388608              8388608              bytes
`;

describe('the open-file limit', () => {
  it('is read from a /proc limits text, unlimited as Infinity', () => {
    expect(parseFileLimit(LIMITS)).toEqual({ soft: 1024, hard: 524288 });
    expect(parseFileLimit(LIMITS.replace('524288  ', 'unlimited'))).toEqual({
      soft: 1024,
      hard: Number.POSITIVE_INFINITY,
    });
    expect(parseFileLimit('Max cpu time unlimited unlimited seconds')).toBeUndefined();
  });

  it("reads this process's own limit", () => {
    const limit = readFileLimit();
    expect(limit?.soft).toBeGreaterThan(0);
    expect(limit?.soft).toBeLessThanOrEqual(limit?.hard ?? 0);
  });

  it("raises a process's soft limit to its hard limit with prlimit, and leaves one already there alone", async () => {
    const hard = readFileLimit()?.hard ?? 0;
    // A process of this user started with a low soft limit (sleep does not raise it, as node does).
    const child = spawn('sh', ['-c', 'ulimit -S -n 256 && exec sleep 30'], { stdio: 'ignore' });
    try {
      const pid = child.pid as number;
      await vi.waitFor(() => expect(readFileLimit(pid)?.soft).toBe(256), { timeout: 5_000, interval: 20 });
      expect(raiseFileLimit(pid)).toEqual({ limit: { soft: hard, hard }, raisedFrom: 256 });
      expect(readFileLimit(pid)).toEqual({ soft: hard, hard });
      expect(raiseFileLimit(pid)).toEqual({ limit: { soft: hard, hard } });
    } finally {
      child.kill();
      await once(child, 'exit');
    }
  });
});
