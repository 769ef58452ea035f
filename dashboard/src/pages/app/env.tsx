// Environment: the redacted list, one value revealed after step-up (the API asks for it; the
// dialog retries), one variable set or removed, and a whole `.env` pasted: parsed here, shown as a
// list of changes, applied with one PUT (the API replaces the set in one transaction). Every write
// sends the ETag of the set it was based on; another editor's change in between is a 412, shown
// with a way to reload, never silently overwritten.
import { useMemo, useState } from 'preact/hooks';
import * as api from '../../api';
import type { EnvVar } from '../../api';
import { ErrorNote, useAction, useLoad } from '../../ui';
import { useCan } from '../../access';
import { parseDotenv } from './dotenv';

type Change = {
  key: string;
  kind: 'added' | 'changed' | 'unchanged' | 'removed';
  value: string | null;
  secret: boolean;
};

// The whole set is replaced; `value: null` keeps a stored secret as it is.
const keep = (items: EnvVar[]) =>
  items.map((v) => ({ key: v.key, value: v.secret ? null : v.value, secret: v.secret }));

export function planBulk(
  current: EnvVar[],
  pasted: Array<{ key: string; value: string }>,
  opts: { replace: boolean; secret: boolean },
): Change[] {
  const byKey = new Map(current.map((v) => [v.key, v]));
  const seen = new Set<string>();
  const out: Change[] = [];
  for (const p of pasted) {
    seen.add(p.key);
    const old = byKey.get(p.key);
    if (!old) out.push({ key: p.key, kind: 'added', value: p.value, secret: opts.secret });
    // A stored secret cannot be compared without revealing it: a pasted value replaces it.
    else if (old.secret || old.value !== p.value)
      out.push({ key: p.key, kind: 'changed', value: p.value, secret: old.secret });
    else out.push({ key: p.key, kind: 'unchanged', value: p.value, secret: old.secret });
  }
  if (opts.replace)
    for (const v of current)
      if (!seen.has(v.key)) out.push({ key: v.key, kind: 'removed', value: null, secret: v.secret });
  return out;
}

interface EnvState {
  items: EnvVar[];
  /** The ETag of the set these items are: every write sends it back as If-Match. */
  etag: string | null;
}

const byKey = (a: EnvVar, b: EnvVar) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0);

const isStale = (e: unknown) => e instanceof api.ApiError && e.code === 'precondition_failed';

export function Env({ id }: { id: string }) {
  const env = useLoad<EnvState>(
    () => api.getEnv(id).then((r) => ({ items: r.data.items, etag: r.etag })),
    [id],
  );
  const [revealed, setRevealed] = useState<Record<string, string>>({});
  const [bulkOpen, setBulkOpen] = useState(false);
  const act = useAction();
  const can = useCan();
  const writable = can('app.env', id);
  const items = env.data?.items;
  const etag = env.data?.etag ?? null;
  const forget = (k: string) => {
    const { [k]: _, ...rest } = revealed;
    setRevealed(rest);
  };
  /** Sets one variable and keeps the list and its ETag in step with the answer. */
  const setOne = async (key: string, value: string, secret: boolean) => {
    const r = await api.setEnvVar(id, key, value, secret, etag);
    env.set({ items: [...(items ?? []).filter((x) => x.key !== key), r.data].sort(byKey), etag: r.etag });
    forget(key);
  };
  return (
    <section class="card" aria-labelledby="env-h">
      <div class="row spread">
        <h2 id="env-h">Environment</h2>
        {writable && (
          <button
            type="button"
            aria-expanded={bulkOpen}
            aria-controls="env-bulk"
            onClick={() => setBulkOpen(!bulkOpen)}
          >
            Paste .env
          </button>
        )}
      </div>
      {isStale(act.error) ? (
        <div class="error" role="alert" data-testid="env-stale">
          <p>
            These variables were changed elsewhere since this page loaded them, so nothing was saved. Reload
            them to see the other change, then make yours again.
          </p>
          <button
            type="button"
            onClick={async () => {
              await env.reload();
              act.clear();
            }}
          >
            Reload variables
          </button>
        </div>
      ) : (
        <ErrorNote error={env.error ?? act.error} />
      )}
      {bulkOpen && items && (
        <BulkEdit
          current={items}
          onApply={async (changes) => {
            const removed = new Set(changes.filter((c) => c.kind === 'removed').map((c) => c.key));
            const pasted = new Map(changes.filter((c) => c.kind !== 'removed').map((c) => [c.key, c]));
            const next = [
              ...keep(items.filter((v) => !removed.has(v.key) && !pasted.has(v.key))),
              ...[...pasted.values()].map((c) => ({ key: c.key, value: c.value, secret: c.secret })),
            ];
            const ok = await act.run(async () => {
              const r = await api.putEnv(id, next, etag);
              env.set({ items: r.data.items, etag: r.etag });
              setRevealed({});
            });
            if (ok) setBulkOpen(false);
            return ok;
          }}
          onCancel={() => setBulkOpen(false)}
        />
      )}
      {items?.length === 0 && <p class="muted">No variables.</p>}
      {items && items.length > 0 && (
        <table class="stack-sm">
          <thead>
            <tr>
              <th>Key</th>
              <th>Value</th>
              {writable && (
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {items.map((v) => (
              <EnvRow
                key={v.key}
                v={v}
                revealed={revealed[v.key]}
                writable={writable}
                busy={act.busy}
                onReveal={() =>
                  void act.run(async () =>
                    setRevealed({ ...revealed, [v.key]: (await api.revealEnv(id, v.key)).value }),
                  )
                }
                onHide={() => forget(v.key)}
                onSave={(value) => act.run(() => setOne(v.key, value, v.secret))}
                onRemove={() =>
                  void act.run(async () => {
                    const r = await api.removeEnvVar(id, v.key, etag);
                    env.set({ items: items.filter((x) => x.key !== v.key), etag: r.etag });
                  })
                }
              />
            ))}
          </tbody>
        </table>
      )}
      {writable && <AddVar onAdd={(k, value, secret) => act.run(() => setOne(k, value, secret))} />}
    </section>
  );
}

function EnvRow(props: {
  v: EnvVar;
  revealed: string | undefined;
  writable: boolean;
  busy: boolean;
  onReveal: () => void;
  onHide: () => void;
  onSave: (value: string) => Promise<boolean>;
  onRemove: () => void;
}) {
  const { v } = props;
  const [editing, setEditing] = useState<string | null>(null);
  return (
    <tr data-testid="env-row">
      <td class="mono">{v.key}</td>
      <td class="mono ellipsis narrow" data-testid="env-value">
        {editing !== null ? (
          <form
            class="row"
            onSubmit={async (e) => {
              e.preventDefault();
              if (await props.onSave(editing)) setEditing(null);
            }}
          >
            <input
              aria-label={`New value of ${v.key}`}
              class="mono"
              value={editing}
              placeholder={v.secret ? 'a new secret value' : ''}
              autoFocus
              onInput={(e) => setEditing((e.target as HTMLInputElement).value)}
            />
            <button type="submit" disabled={props.busy}>
              Save
            </button>
            <button type="button" onClick={() => setEditing(null)}>
              Cancel
            </button>
          </form>
        ) : v.secret ? (
          (props.revealed ?? (
            <span class="muted" aria-label="hidden value">
              ••••••
            </span>
          ))
        ) : (
          v.value
        )}
      </td>
      {props.writable && (
        <td class="row wrap">
          {editing === null && (
            <button
              type="button"
              aria-label={`Edit ${v.key}`}
              onClick={() => setEditing(v.secret ? (props.revealed ?? '') : (v.value ?? ''))}
            >
              Edit
            </button>
          )}
          {v.secret && props.revealed === undefined && (
            <button type="button" aria-label={`Reveal ${v.key}`} onClick={props.onReveal}>
              Reveal
            </button>
          )}
          {v.secret && props.revealed !== undefined && (
            <button type="button" aria-label={`Hide ${v.key}`} onClick={props.onHide}>
              Hide
            </button>
          )}
          <button type="button" aria-label={`Remove ${v.key}`} onClick={props.onRemove}>
            Remove
          </button>
        </td>
      )}
    </tr>
  );
}

/** A new variable: secret unless unticked, for every new key (the box is ticked again after each). */
function AddVar({ onAdd }: { onAdd: (key: string, value: string, secret: boolean) => Promise<boolean> }) {
  const [key, setKey] = useState('');
  const [value, setValue] = useState('');
  const [secret, setSecret] = useState(true);
  return (
    <form
      class="row wrap"
      onSubmit={async (e) => {
        e.preventDefault();
        if (!(await onAdd(key.trim(), value, secret))) return;
        setKey('');
        setValue('');
        setSecret(true);
      }}
    >
      <label>
        Key
        <input
          name="env_key"
          required
          value={key}
          onInput={(e) => setKey((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        Value
        <input
          name="env_value"
          value={value}
          onInput={(e) => setValue((e.target as HTMLInputElement).value)}
        />
      </label>
      <label class="inline">
        <input
          type="checkbox"
          name="env_secret"
          checked={secret}
          onChange={(e) => setSecret((e.target as HTMLInputElement).checked)}
        />{' '}
        Secret
      </label>
      <button type="submit">Set</button>
    </form>
  );
}

function BulkEdit({
  current,
  onApply,
  onCancel,
}: {
  current: EnvVar[];
  onApply: (c: Change[]) => Promise<boolean>;
  onCancel: () => void;
}) {
  const [text, setText] = useState('');
  const [replace, setReplace] = useState(false);
  const [secret, setSecret] = useState(true);
  const [busy, setBusy] = useState(false);
  const parsed = useMemo(() => parseDotenv(text), [text]);
  const changes = useMemo(
    () => planBulk(current, parsed.entries, { replace, secret }),
    [current, parsed, replace, secret],
  );
  const effective = changes.filter((c) => c.kind !== 'unchanged');
  return (
    <div id="env-bulk" class="bulk" data-testid="env-bulk">
      <label class="block">
        .env content
        <textarea
          rows={8}
          class="mono"
          spellcheck={false}
          autocomplete="off"
          placeholder={'DATABASE_HOST=db\nexport LOG_LEVEL="info"'}
          value={text}
          onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
        />
      </label>
      <div class="row wrap">
        <label class="inline">
          <input
            type="checkbox"
            checked={secret}
            onChange={(e) => setSecret((e.target as HTMLInputElement).checked)}
          />{' '}
          Store new keys as secrets
        </label>
        <label class="inline">
          <input
            type="checkbox"
            checked={replace}
            onChange={(e) => setReplace((e.target as HTMLInputElement).checked)}
          />{' '}
          Remove keys missing from the paste
        </label>
      </div>
      {parsed.errors.length > 0 && (
        <ul class="error" role="alert" data-testid="env-bulk-errors">
          {parsed.errors.map((e) => (
            <li key={e.line}>
              Line {e.line}: {e.message}
            </li>
          ))}
        </ul>
      )}
      {changes.length > 0 && (
        <table data-testid="env-bulk-preview">
          <caption class="sr-only">Changes the paste makes</caption>
          <thead>
            <tr>
              <th>Key</th>
              <th>Change</th>
              <th>New value</th>
            </tr>
          </thead>
          <tbody>
            {changes.map((c) => (
              <tr key={c.key} data-testid="env-change" class={`change-${c.kind}`}>
                <td class="mono">{c.key}</td>
                <td>{c.kind}</td>
                <td class="mono ellipsis narrow">
                  {c.kind === 'removed' ? (
                    '—'
                  ) : c.secret ? (
                    <span class="muted">secret ({c.value!.length} characters)</span>
                  ) : (
                    c.value
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      <div class="row">
        <button
          type="button"
          class="primary"
          disabled={busy || effective.length === 0 || parsed.errors.length > 0}
          onClick={async () => {
            setBusy(true);
            try {
              await onApply(changes);
            } finally {
              setBusy(false);
            }
          }}
        >
          Apply {effective.length} change{effective.length === 1 ? '' : 's'}
        </button>
        <button type="button" onClick={onCancel}>
          Cancel
        </button>
      </div>
    </div>
  );
}
