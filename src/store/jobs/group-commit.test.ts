/** Group commit: calls of one turn run as one group, in order; later calls form the next group; a failure fails its group. */
import { describe, expect, it } from 'vitest';
import { GroupCommit } from './group-commit.js';

describe('GroupCommit', () => {
  it('runs the calls of one turn as one group, in arrival order, each answered with its own outcome', async () => {
    const groups: number[][] = [];
    const commit = new GroupCommit<number, string>({
      run: async (items) => {
        groups.push([...items]);
        return items.map((i) => `done ${i}`);
      },
    });
    const first = await Promise.all([1, 2, 3].map((i) => commit.submit(i)));
    expect(first).toEqual(['done 1', 'done 2', 'done 3']);
    expect(await commit.submit(4)).toBe('done 4');
    expect(groups).toEqual([[1, 2, 3], [4]]);
  });

  it('holds calls that arrive while a group runs for the next group', async () => {
    const groups: number[][] = [];
    let release: () => void = () => undefined;
    const gate = new Promise<void>((resolve) => {
      release = resolve;
    });
    const commit = new GroupCommit<number, number>({
      run: async (items) => {
        groups.push([...items]);
        if (groups.length === 1) await gate;
        return [...items];
      },
    });
    const a = commit.submit(1);
    await new Promise((resolve) => setImmediate(resolve));
    const rest = [commit.submit(2), commit.submit(3)];
    await new Promise((resolve) => setImmediate(resolve));
    expect(groups).toEqual([[1]]);
    release();
    expect(await Promise.all([a, ...rest])).toEqual([1, 2, 3]);
    expect(groups).toEqual([[1], [2, 3]]);
  });

  it("fails every call of a group whose run throws, and runs the next group's calls", async () => {
    let fail = true;
    const commit = new GroupCommit<number, number>({
      run: async (items) => {
        if (fail) throw new Error('rolled back');
        return [...items];
      },
    });
    const failed = await Promise.allSettled([commit.submit(1), commit.submit(2)]);
    expect(failed.map((r) => r.status)).toEqual(['rejected', 'rejected']);
    fail = false;
    expect(await commit.submit(3)).toBe(3);
  });
});
