/** Milliseconds since the epoch; injected so that tests control time. */
export type Clock = () => number;

export const systemClock: Clock = () => Date.now();

/** Timer functions, injected beside a Clock so that tests fire them by advancing time; method syntax so that
 * Node's own setTimeout/clearTimeout fit. */
export interface Timers {
  setTimeout(callback: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

export const systemTimers: Timers = {
  setTimeout: (callback, ms) => setTimeout(callback, ms),
  clearTimeout: (handle) => clearTimeout(handle as NodeJS.Timeout),
};
