import { describe, expect, it } from 'vitest';
import { StoreLookup } from './lookup.js';

function setup(answers: Record<string, string> = {}) {
  let now = 0;
  const asked: string[] = [];
  const pending: (() => void)[] = [];
  let failing = false;
  const lookup = new StoreLookup<string>({
    find: (name) =>
      new Promise((resolve, reject) => {
        asked.push(name);
        pending.push(() => (failing ? reject(new Error('store down')) : resolve(answers[name])));
      }),
    clock: () => now,
    missTtlMs: 1000,
    maxMisses: 2,
  });
  const answerAll = async () => {
    for (const answer of pending.splice(0)) answer();
    await new Promise((resolve) => setImmediate(resolve));
  };
  return {
    lookup,
    asked,
    answerAll,
    advance: (ms: number) => {
      now += ms;
    },
    fail: () => {
      failing = true;
    },
  };
}

describe('StoreLookup', () => {
  it('asks once for concurrent questions about one name', async () => {
    const t = setup({ a: 'endpoint-a' });
    const answers = Promise.all([t.lookup.find('a'), t.lookup.find('a'), t.lookup.find('b')]);
    await t.answerAll();
    expect(await answers).toEqual(['endpoint-a', 'endpoint-a', undefined]);
    expect(t.asked).toEqual(['a', 'b']);
  });

  it('believes a miss for the TTL or until told to forget, and never keeps a hit', async () => {
    const t = setup({ a: 'endpoint-a' });
    const first = Promise.all([t.lookup.find('a'), t.lookup.find('nope')]);
    await t.answerAll();
    await first;
    expect(await t.lookup.find('nope')).toBeUndefined();
    t.advance(999);
    expect(await t.lookup.find('nope')).toBeUndefined();
    expect(t.asked).toEqual(['a', 'nope']);
    t.advance(1);
    const again = t.lookup.find('nope');
    await t.answerAll();
    await again;
    t.lookup.forgetMisses();
    const afterForget = t.lookup.find('nope');
    const hitAgain = t.lookup.find('a');
    await t.answerAll();
    await Promise.all([afterForget, hitAgain]);
    expect(t.asked).toEqual(['a', 'nope', 'nope', 'nope', 'a']);
  });

  it('shares a failure with every waiter and does not remember it', async () => {
    const t = setup();
    t.fail();
    const both = Promise.allSettled([t.lookup.find('x'), t.lookup.find('x')]);
    await t.answerAll();
    expect((await both).map((r) => r.status)).toEqual(['rejected', 'rejected']);
    const next = t.lookup.find('x').catch(() => undefined);
    await t.answerAll();
    await next;
    expect(t.asked).toEqual(['x', 'x']);
  });

  it('remembers a bounded number of misses', async () => {
    const t = setup();
    for (const name of ['m1', 'm2', 'm3']) {
      const pending = t.lookup.find(name);
      await t.answerAll();
      await pending;
    }
    // m1 and m2 filled it; m3 cleared it and is the one remembered.
    const checks = Promise.all([t.lookup.find('m1'), t.lookup.find('m3')]);
    await t.answerAll();
    await checks;
    expect(t.asked).toEqual(['m1', 'm2', 'm3', 'm1']);
  });
});
