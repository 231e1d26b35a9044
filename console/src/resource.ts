/**
 * Loading what a page shows and running what it does, each keeping its error (as the person
 * reads it) and whether it is under way.
 */
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api.js';

export function messageOf(err: unknown): string {
  if (err instanceof ApiError) return err.message;
  if (err instanceof Error) return err.message;
  return String(err);
}

export interface Resource<T> {
  data: T | undefined;
  error: string;
  loading: boolean;
  reload(): Promise<void>;
  /** Reload soon, once, however many times it is asked within the wait (live events). */
  reloadSoon(): void;
}

export function useResource<T>(load: () => Promise<T>, deps: unknown[]): Resource<T> {
  const [data, setData] = useState<T | undefined>(undefined);
  const [error, setError] = useState('');
  const [loading, setLoading] = useState(true);
  const seq = useRef(0);
  const timer = useRef<number | undefined>(undefined);
  const loader = useRef(load);
  loader.current = load;
  const reload = useCallback(async () => {
    const n = ++seq.current;
    setLoading(true);
    try {
      const value = await loader.current();
      if (n !== seq.current) return;
      setData(value);
      setError('');
    } catch (err) {
      if (n !== seq.current) return;
      setError(messageOf(err));
    } finally {
      if (n === seq.current) setLoading(false);
    }
  }, []);
  const reloadSoon = useCallback(() => {
    if (timer.current !== undefined) return;
    timer.current = window.setTimeout(() => {
      timer.current = undefined;
      void reload();
    }, 150);
  }, [reload]);
  useEffect(() => {
    void reload();
    return () => window.clearTimeout(timer.current);
  }, deps);
  return { data, error, loading, reload, reloadSoon };
}

/** Runs an action, keeping its error and whether it is under way, for a form or a button. */
export function useAction<A extends unknown[]>(
  action: (...args: A) => Promise<void>,
): { run: (...args: A) => Promise<void>; busy: boolean; error: string; clear(): void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState('');
  const run = async (...args: A) => {
    setBusy(true);
    setError('');
    try {
      await action(...args);
    } catch (err) {
      setError(messageOf(err));
    } finally {
      setBusy(false);
    }
  };
  return { run, busy, error, clear: () => setError('') };
}
