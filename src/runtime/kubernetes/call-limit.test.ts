import { describe, expect, it } from 'vitest';
import { CallLimit } from './call-limit.js';

function deferred() {
  let resolve: () => void = () => undefined;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

describe('CallLimit', () => {
  it('runs at most max calls at once, the others in the order they came, also after a failure', async () => {
    const limit = new CallLimit(2);
    const gates = [deferred(), deferred(), deferred(), deferred()];
    const started: number[] = [];
    const runs = gates.map((gate, i) =>
      limit.run(async () => {
        started.push(i);
        await gate.promise;
        if (i === 0) throw new Error('refused');
        return i;
      }),
    );
    await Promise.resolve();
    expect(started).toEqual([0, 1]);
    expect(limit.waiting).toBe(2);
    gates[0]?.resolve();
    await expect(runs[0]).rejects.toThrow('refused');
    expect(started).toEqual([0, 1, 2]);
    gates[2]?.resolve();
    await expect(runs[2]).resolves.toBe(2);
    expect(started).toEqual([0, 1, 2, 3]);
    gates[1]?.resolve();
    gates[3]?.resolve();
    expect(await Promise.all(runs.slice(1))).toEqual([1, 2, 3]);
    expect(limit.waiting).toBe(0);
    // All turns given back: two run at once again.
    const again = [deferred(), deferred()];
    const more: number[] = [];
    const both = again.map((gate, i) =>
      limit.run(async () => {
        more.push(i);
        await gate.promise;
      }),
    );
    await Promise.resolve();
    expect(more).toEqual([0, 1]);
    for (const gate of again) gate.resolve();
    await Promise.all(both);
  });
});
