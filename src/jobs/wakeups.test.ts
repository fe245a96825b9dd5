import { describe, expect, it } from 'vitest';
import { ManualTimers } from '../../test/support/manual-timers.js';
import { Wakeups } from './wakeups.js';

describe('wake-ups of long polls', () => {
  it('end a wait on a wake of its key, at its bound, at the recheck interval, or on abort; and keep nothing after', async () => {
    const timers = new ManualTimers();
    const wakeups = new Wakeups({ timers, recheckMs: 500 });
    const ended: string[] = [];
    const track = (name: string, p: Promise<void>) => p.then(() => ended.push(name));
    void track('woken', wakeups.wait('job:1', 10_000));
    void track('bounded', wakeups.wait('job:2', 100));
    void track('recheck', wakeups.wait('job:3', 10_000));
    const abort = new AbortController();
    void track('aborted', wakeups.wait('job:4', 10_000, abort.signal));
    expect(wakeups.size).toBe(4);
    wakeups.wake('job:1');
    wakeups.wake('job:none');
    abort.abort();
    await Promise.resolve();
    timers.advance(100);
    await Promise.resolve();
    expect(ended).toEqual(['woken', 'aborted', 'bounded']);
    timers.advance(400);
    await Promise.resolve();
    expect(ended).toEqual(['woken', 'aborted', 'bounded', 'recheck']);
    expect(wakeups.size).toBe(0);
  });
});
