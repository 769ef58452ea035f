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
export function useLoad<T>(
  load: () => Promise<T>,
  deps: unknown[] = [],
  initial?: T,
): { data: T | null; error: unknown; reload: () => Promise<void>; set: (t: T) => void } {
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
export function useAction(): {
  busy: boolean;
  error: unknown;
  run: (fn: () => Promise<unknown>) => Promise<boolean>;
  clear: () => void;
} {
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

/**
 * A 400's details by field, for showing each next to its input: `prefix` is stripped from the
 * API's field path (`source.build.start` -> `start`). Details naming no field are left out.
 */
export function fieldErrors(e: unknown, prefix: string): Record<string, string> {
  const out: Record<string, string> = {};
  if (!(e instanceof ApiError) || e.status !== 400) return out;
  for (const d of e.details ?? []) {
    if (!d.field?.startsWith(prefix) || !d.message) continue;
    const k = d.field.slice(prefix.length) || '.';
    out[k] = out[k] ? `${out[k]}; ${d.message}` : d.message;
  }
  return out;
}

/**
 * A labelled text input with an optional hint and the API's error for it, both tied to the input
 * through aria-describedby so a screen reader reads them with the field.
 */
export function Field(props: {
  id: string;
  label: string;
  value: string;
  onInput: (v: string) => void;
  error?: string;
  hint?: string;
  mono?: boolean;
  placeholder?: string;
  inputMode?: 'numeric' | 'decimal';
}) {
  const described = [props.hint && `${props.id}-hint`, props.error && `${props.id}-err`]
    .filter(Boolean)
    .join(' ');
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        name={props.id}
        class={props.mono ? 'mono' : undefined}
        value={props.value}
        placeholder={props.placeholder}
        inputMode={props.inputMode}
        aria-invalid={props.error ? true : undefined}
        aria-describedby={described || undefined}
        onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
      />
      {props.hint && (
        <span id={`${props.id}-hint`} class="muted small">
          {props.hint}
        </span>
      )}
      {props.error && (
        <span id={`${props.id}-err`} class="error small" data-testid="field-error">
          {props.error}
        </span>
      )}
    </div>
  );
}
