/** The per-owner write gate: one write of an owner at a time, others in order, a bounded wait, owners apart. */
import { describe, expect, it } from 'vitest';
import { OwnerWriteGate } from './owner-write-gate.js';

describe('OwnerWriteGate', () => {
  it("lets one write of an owner in at a time, the next ones in order, and never holds another owner's", async () => {
    const gate = new OwnerWriteGate({ maxWaiting: 5 });
    const order: string[] = [];
    const first = await gate.enter('a');
    const second = gate.enter('a').then((leave) => {
      order.push('a2');
      return leave;
    });
    const third = gate.enter('a').then((leave) => {
      order.push('a3');
      return leave;
    });
    const other = await gate.enter('b');
    expect(other).toBeDefined();
    await Promise.resolve();
    expect(order).toEqual([]);
    first?.();
    first?.(); // Leaving twice lets only one in.
    (await second)?.();
    (await third)?.();
    expect(order).toEqual(['a2', 'a3']);
    expect(await gate.enter('a')).toBeDefined();
  });

  it("lets what arrived in the event loop meanwhile run before the owner's next write", async () => {
    const gate = new OwnerWriteGate({ maxWaiting: 5 });
    const order: string[] = [];
    const first = await gate.enter('a');
    const second = gate.enter('a').then((leave) => {
      order.push('a2');
      return leave;
    });
    setImmediate(() => order.push('another request'));
    first?.();
    (await second)?.();
    expect(order).toEqual(['another request', 'a2']);
  });

  it('refuses at once a write beyond the waiting bound', async () => {
    const gate = new OwnerWriteGate({ maxWaiting: 1 });
    await gate.enter('a');
    void gate.enter('a');
    expect(await gate.enter('a')).toBeUndefined();
  });
});
