/**
 * `usePoll`: a value read now and again while the page shows it, so that pages are live without a reload: every
 * `interval` ms, or after the delay `interval(value)` gives for the last value read (null: no more reads until the
 * next `refresh`). A failed read keeps the last value and reports its error.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from './api-context.js';

export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  /** Reads again now (after an action), and goes on reading as `interval` says. */
  refresh: () => Promise<void>;
}

export type PollInterval<T> = number | ((last: T | undefined) => number | null);

export function usePoll<T>(read: () => Promise<T>, interval: PollInterval<T>, deps: unknown[]): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const live = useRef(true);
  const last = useRef<T | undefined>(undefined);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  const every = useRef(interval);
  every.current = interval;
  const once = useCallback(async (): Promise<void> => {
    try {
      const value = await read();
      if (!live.current) return;
      last.current = value;
      setData(value);
      setError(undefined);
    } catch (failure) {
      if (live.current) setError(describeError(failure));
    }
    if (!live.current) return;
    // One timer at a time: a refresh during a wait replaces the wait.
    clearTimeout(timer.current);
    const delay = typeof every.current === 'number' ? every.current : every.current(last.current);
    timer.current = delay === null ? undefined : setTimeout(() => void once(), delay);
  }, deps);
  useEffect(() => {
    live.current = true;
    void once();
    return () => {
      live.current = false;
      clearTimeout(timer.current);
    };
  }, [once]);
  return { data, error, refresh: once };
}
