/**
 * `usePoll`: a value read now and again every `intervalMs` while the page shows it, so that pages are live without
 * a reload. One read at a time; a failed read keeps the last value and reports its error.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { describeError } from './api-context.js';

export interface Polled<T> {
  data: T | undefined;
  error: string | undefined;
  /** Reads again now (after an action). */
  refresh: () => Promise<void>;
}

export function usePoll<T>(read: () => Promise<T>, intervalMs: number, deps: unknown[]): Polled<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const live = useRef(true);
  const once = useCallback(async () => {
    try {
      const value = await read();
      if (!live.current) return;
      setData(value);
      setError(undefined);
    } catch (failure) {
      if (live.current) setError(describeError(failure));
    }
  }, deps);
  useEffect(() => {
    live.current = true;
    let timer: ReturnType<typeof setTimeout> | undefined;
    const loop = async () => {
      await once();
      if (live.current) timer = setTimeout(loop, intervalMs);
    };
    void loop();
    return () => {
      live.current = false;
      clearTimeout(timer);
    };
  }, [once, intervalMs]);
  return { data, error, refresh: once };
}
