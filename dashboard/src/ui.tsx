// Small shared pieces: error display, status badges, dates, a loader hook.
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';

export function errorText(e: unknown): string {
  if (e instanceof ApiError) {
    const d = e.details?.map((x) => [x.field, x.message].filter(Boolean).join(': ')).filter(Boolean);
    return d?.length ? `${e.message} (${d.join('; ')})` : e.message;
  }
  return e instanceof Error ? e.message : String(e);
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {errorText(error)}
    </p>
  );
}

export function Badge({ status }: { status: string }) {
  return <span class={`badge badge-${status}`}>{status.replace(/_/g, ' ')}</span>;
}

export function When({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  const d = new Date(at);
  return (
    <time dateTime={at} title={d.toISOString()}>
      {d.toLocaleString()}
    </time>
  );
}

/**
 * Loads once (and on reload()); keeps the last data while reloading. With `initial` (data already
 * fetched, e.g. before the first render) the first load is skipped.
 */
export function useLoad<T>(load: () => Promise<T>, deps: unknown[] = [], initial?: T): { data: T | null; error: unknown; reload: () => Promise<void>; set: (t: T) => void } {
  const [data, setData] = useState<T | null>(initial ?? null);
  const [error, setError] = useState<unknown>(null);
  const skipFirst = useRef(initial !== undefined);
  const reload = useCallback(async () => {
    try {
      setData(await load());
      setError(null);
    } catch (e) {
      setError(e);
    }
  }, deps);
  useEffect(() => {
    if (skipFirst.current) {
      skipFirst.current = false;
      return;
    }
    void reload();
  }, [reload]);
  return { data, error, reload, set: setData };
}

/** Runs an action, keeping its error and a busy flag for the button that started it. */
export function useAction(): { busy: boolean; error: unknown; run: (fn: () => Promise<unknown>) => Promise<boolean>; clear: () => void } {
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const run = useCallback(async (fn: () => Promise<unknown>) => {
    setBusy(true);
    setError(null);
    try {
      await fn();
      return true;
    } catch (e) {
      setError(e);
      return false;
    } finally {
      setBusy(false);
    }
  }, []);
  return { busy, error, run, clear: () => setError(null) };
}
