// Small shared pieces: error display, status badges, dates, a loader hook, form fields and the
// save button of a settings form.
import type { ComponentChildren } from 'preact';
import { useCallback, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError } from './api';
import { sentence, type FormErrors } from './form-errors';

/** The API's sentence (its details belong next to the fields they name: see form-errors.ts). */
export function errorText(e: unknown): string {
  return sentence(e instanceof Error ? e.message : String(e));
}

export function ErrorNote({ error }: { error: unknown }) {
  if (!error) return null;
  return (
    <p class="error" role="alert">
      {errorText(error)}
    </p>
  );
}

/** A form's one sentence that belongs to no field (formErrors' `note`). */
export function FormNote({ errors }: { errors: FormErrors }) {
  if (!errors.note) return null;
  return (
    <p class="error" role="alert" data-testid="form-error">
      {errors.note}
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

/** The described-by ids of a field's hint and error (Notes writes them under those ids). */
const describedBy = (id: string, hint?: string, error?: string) =>
  [hint && `${id}-hint`, error && `${id}-err`].filter(Boolean).join(' ') || undefined;

/** A field's hint and the API's error for it. */
function Notes({ id, hint, error }: { id: string; hint?: string | undefined; error?: string | undefined }) {
  return (
    <>
      {hint && (
        <span id={`${id}-hint`} class="muted small">
          {hint}
        </span>
      )}
      {error && (
        <span id={`${id}-err`} class="error small" data-testid="field-error">
          {error}
        </span>
      )}
    </>
  );
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
  type?: 'text' | 'password' | 'url' | 'number';
  autoComplete?: string;
  list?: string;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <input
        id={props.id}
        name={props.id}
        type={props.type}
        autoComplete={props.autoComplete}
        list={props.list}
        class={props.mono ? 'mono' : undefined}
        value={props.value}
        placeholder={props.placeholder}
        inputMode={props.inputMode}
        aria-invalid={props.error ? true : undefined}
        aria-describedby={describedBy(props.id, props.hint, props.error)}
        onInput={(e) => props.onInput((e.target as HTMLInputElement).value)}
      />
      <Notes id={props.id} hint={props.hint} error={props.error} />
    </div>
  );
}

/** A labelled select, with its hint and the API's error tied to it the way Field ties them. */
export function SelectField<T extends string>(props: {
  id: string;
  label: string;
  value: T;
  options: ReadonlyArray<readonly [T, string]>;
  onChange: (v: T) => void;
  error?: string;
  hint?: string;
}) {
  return (
    <div class="field">
      <label for={props.id}>{props.label}</label>
      <select
        id={props.id}
        value={props.value}
        aria-invalid={props.error ? true : undefined}
        aria-describedby={describedBy(props.id, props.hint, props.error)}
        onChange={(e) => props.onChange((e.target as HTMLSelectElement).value as T)}
      >
        {props.options.map(([v, label]) => (
          <option key={v} value={v}>
            {label}
          </option>
        ))}
      </select>
      <Notes id={props.id} hint={props.hint} error={props.error} />
    </div>
  );
}

export interface Saving {
  busy: boolean;
  error: unknown;
  /** The last save succeeded and nothing was changed since. */
  saved: boolean;
  /** A field changed: the "Saved." goes. */
  changed: () => void;
  run: (save: () => Promise<unknown>) => void;
}

/** The state of a settings form's save: its action, and "Saved." from a success to the next change. */
export function useSaving(): Saving {
  const act = useAction();
  const [saved, setSaved] = useState(false);
  return {
    busy: act.busy,
    error: act.error,
    saved,
    changed: () => setSaved(false),
    run: (save) => {
      setSaved(false);
      void act.run(async () => {
        await save();
        setSaved(true);
      });
    },
  };
}

/**
 * A settings form: its fields (and error note), then its save button and a "Saved." status once
 * `onSave` succeeded. Validation is the API's: each refusal is shown next to its field.
 */
export function SaveForm(props: {
  saving: Saving;
  label: string;
  onSave: () => Promise<unknown>;
  children: ComponentChildren;
  /** False: the settings are shown, not changed (no button; the fields are disabled). */
  allowed?: boolean;
}) {
  if (props.allowed === false)
    return (
      <fieldset class="stack" disabled>
        {props.children}
        <p class="muted small">Changing this needs an admin.</p>
      </fieldset>
    );
  return (
    <form
      class="stack"
      noValidate
      onSubmit={(e) => {
        e.preventDefault();
        props.saving.run(props.onSave);
      }}
    >
      {props.children}
      <div class="row">
        <button type="submit" class="primary" disabled={props.saving.busy}>
          {props.label}
        </button>
        {props.saving.saved && (
          <span role="status" class="ok">
            Saved.
          </span>
        )}
      </div>
    </form>
  );
}

/** A function that runs `fn` at most once per `ms`, the last call of a burst included. */
export function useThrottled(fn: () => void, ms: number): () => void {
  const latest = useRef(fn);
  latest.current = fn;
  const timer = useRef<ReturnType<typeof setTimeout> | null>(null);
  useEffect(() => () => void (timer.current && clearTimeout(timer.current)), []);
  return useCallback(() => {
    if (timer.current) return;
    timer.current = setTimeout(() => {
      timer.current = null;
      latest.current();
    }, ms);
  }, [ms]);
}

/** "5 min ago" (the exact time on hover). */
export function Ago({ at }: { at: string | null | undefined }) {
  if (!at) return <span class="muted">—</span>;
  const d = new Date(at);
  const s = Math.max(0, (Date.now() - d.getTime()) / 1000);
  const text =
    s < 60
      ? 'just now'
      : s < 3600
        ? `${Math.floor(s / 60)} min ago`
        : s < 86_400
          ? `${Math.floor(s / 3600)} h ago`
          : s < 86_400 * 30
            ? `${Math.floor(s / 86_400)} days ago`
            : d.toLocaleDateString();
  return (
    <time dateTime={at} title={d.toLocaleString()}>
      {text}
    </time>
  );
}
