import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ModelLocks, UNWRITTEN_LOCK_MS } from './model-lock.js';

describe("a model's lock in a cache directory several agents share", () => {
  let hubDir: string;
  let lockFile: string;
  beforeEach(() => {
    hubDir = mkdtempSync(path.join(tmpdir(), 'corral-model-lock-'));
    mkdirSync(path.join(hubDir, '.corral-locks'));
    lockFile = path.join(hubDir, '.corral-locks', 'models--acme--tiny');
  });
  afterEach(() => rmSync(hubDir, { recursive: true, force: true }));

  it('takes over a lock left without a PID (an agent killed before writing it) once it is old, not before', async () => {
    writeFileSync(lockFile, '');
    const madeAt = statSync(lockFile).mtimeMs;
    const looks: number[] = [];
    // The clock advances a second at each look: young at first, abandoned after UNWRITTEN_LOCK_MS.
    let now = madeAt;
    const locks = new ModelLocks({
      hubDir,
      retryMs: 0,
      now: () => {
        now += 1_000;
        looks.push(now - madeAt);
        return now;
      },
    });
    await expect(locks.hold('acme/tiny', async () => 'fetched')).resolves.toBe('fetched');
    expect(looks.filter((age) => age <= UNWRITTEN_LOCK_MS).length).toBeGreaterThan(0);
    expect(looks.at(-1)).toBeGreaterThan(UNWRITTEN_LOCK_MS);
  });

  it("takes over a lock whose holder's process is gone, and waits for one whose holder runs", async () => {
    writeFileSync(lockFile, '4242');
    const gone = new ModelLocks({ hubDir, retryMs: 0, alive: () => false });
    await expect(gone.hold('acme/tiny', async () => 'fetched')).resolves.toBe('fetched');

    writeFileSync(lockFile, '4242');
    let looks = 0;
    const running = new ModelLocks({
      hubDir,
      retryMs: 0,
      alive: () => {
        looks += 1;
        // The holder ends after three looks.
        return looks < 3;
      },
    });
    await expect(running.hold('acme/tiny', async () => 'fetched')).resolves.toBe('fetched');
    expect(looks).toBe(3);
  });

  it("tries the lock without waiting: refused while another agent's live process or this agent's fetch holds it", async () => {
    writeFileSync(lockFile, '4242');
    const locks = new ModelLocks({ hubDir, retryMs: 0, alive: () => true });
    await expect(locks.tryHold('acme/tiny', async () => 'removed')).resolves.toBeUndefined();
    // The other agent's file is left as it was.
    expect(readFileSync(lockFile, 'utf8')).toBe('4242');

    rmSync(lockFile);
    let release: () => void = () => {};
    let started: () => void = () => {};
    const running = new Promise<void>((resolve) => {
      started = resolve;
    });
    const fetching = locks.hold('acme/tiny', () => {
      started();
      return new Promise<string>((resolve) => {
        release = () => resolve('fetched');
      });
    });
    // The fetch runs only once its lock file is taken.
    await running;
    expect(existsSync(lockFile)).toBe(true);
    await expect(locks.tryHold('acme/tiny', async () => 'removed')).resolves.toBeUndefined();
    release();
    await expect(fetching).resolves.toBe('fetched');
    await expect(locks.tryHold('acme/tiny', async () => 'removed')).resolves.toBe('removed');
    expect(existsSync(lockFile)).toBe(false);
  });

  it('lets a fetch that joined a refused try take the lock once it is free', async () => {
    writeFileSync(lockFile, '4242');
    let holderAlive = true;
    const locks = new ModelLocks({ hubDir, retryMs: 0, alive: () => holderAlive });
    const tried = locks.tryHold('acme/tiny', async () => 'removed');
    const fetching = locks.hold('acme/tiny', async () => 'fetched');
    await expect(tried).resolves.toBeUndefined();
    holderAlive = false;
    await expect(fetching).resolves.toBe('fetched');
  });
});
