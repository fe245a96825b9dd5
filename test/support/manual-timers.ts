/** Manual time for unit tests of timer-driven code (`ManualTimers`, `settle`): no real time passes. */
import type { Timers } from '../../src/ports/clock.js';

interface Pending {
  at: number;
  callback: () => void;
}

/**
 * Timers that fire only when a test advances time; `now` is the matching clock. Due timers fire in deadline order
 * (same deadline: in the order they were set), each with `now` at its deadline.
 */
export class ManualTimers implements Timers {
  now: number;
  #next = 1;
  readonly #pending = new Map<number, Pending>();

  constructor(start = 0) {
    this.now = start;
  }

  setTimeout(callback: () => void, ms: number): unknown {
    const id = this.#next++;
    this.#pending.set(id, { at: this.now + ms, callback });
    return id;
  }

  clearTimeout(handle: unknown): void {
    this.#pending.delete(handle as number);
  }

  /** Timers set and not yet fired or cleared. */
  get count(): number {
    return this.#pending.size;
  }

  /** Timers due now (set for a time not after `now`) that have not fired yet. */
  due(): number {
    let due = 0;
    for (const pending of this.#pending.values()) if (pending.at <= this.now) due += 1;
    return due;
  }

  /** Advances the clock by `ms`, firing due timers synchronously. */
  advance(ms: number): void {
    const target = this.now + ms;
    for (let due = this.#takeDue(target); due; due = this.#takeDue(target)) due.callback();
    this.now = target;
  }

  /** As advance(), letting promise callbacks run after each timer (for code that awaits between timers). */
  async advanceSettling(ms: number): Promise<void> {
    const target = this.now + ms;
    for (let due = this.#takeDue(target); due; due = this.#takeDue(target)) {
      due.callback();
      await settle();
    }
    this.now = target;
    await settle();
  }

  /** Removes and returns the earliest timer due by `target`, with the clock moved to its deadline. */
  #takeDue(target: number): Pending | undefined {
    let due: [number, Pending] | undefined;
    for (const entry of this.#pending) {
      if (entry[1].at <= target && (!due || entry[1].at < due[1].at)) due = entry;
    }
    if (!due) return undefined;
    this.#pending.delete(due[0]);
    this.now = due[1].at;
    return due[1];
  }
}

/** Lets the callbacks of settled promises run (a few microtask turns; no real time passes). */
export async function settle(): Promise<void> {
  for (let i = 0; i < 10; i++) await Promise.resolve();
}

/**
 * Lets the event loop run `turns` times (setImmediate): I/O under way on loopback sockets is read meanwhile; no time
 * passes on a manual clock and no timer is waited for.
 */
export async function loopTurns(turns: number): Promise<void> {
  for (let i = 0; i < turns; i++) await new Promise((resolve) => setImmediate(resolve));
}
