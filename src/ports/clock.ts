/** Milliseconds since the epoch; injected so that tests control time. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** Timer functions, injected beside a Clock so that tests fire them by advancing time; method syntax so that
 * Node's own setTimeout/clearTimeout fit. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
  /**
   * Runs `callback` on the next turn of the event loop, after the I/O and timers already due (Node's setImmediate).
   * Optional: timers without it (tests' manual timers) run it as a 0 ms timeout (see `nextTurn`).
   */
  setImmediate?(callback: () => void): unknown;
  clearImmediate?(handle: unknown): void;
}

export const systemTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
  setImmediate: (callback) => setImmediate(callback),
  clearImmediate: (handle) => clearImmediate(handle as NodeJS.Immediate),
};

/** Runs `callback` on the timers' next turn (setImmediate where they have it); returns its cancel. */
export function nextTurn(timers: Timers, callback: () => void): () => void {
  if (timers.setImmediate) {
    const handle = timers.setImmediate(callback);
    return () => timers.clearImmediate?.(handle);
  }
  const handle = timers.setTimeout(callback, 0);
  return () => timers.clearTimeout(handle);
}
