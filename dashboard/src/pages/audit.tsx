// The audit log: server-side filters (actor, action prefix, target, time), a virtualised list
// (only the rows in view are in the DOM, so a long history stays cheap), the diff of the selected
// entry, and its revert behind a confirmation (and a forced revert after a conflict).
import { useEffect, useRef, useState } from 'preact/hooks';
import * as api from '../api';
import type { AuditDiffRow, AuditFilter, AuditRow } from '../api';
import { ApiError } from '../api';
import { ErrorNote, When, errorText, useAction, useLoad } from '../ui';
import { useTitle } from '../title';

const ROW_HEIGHT = 44;
const VIEW_HEIGHT = 440;
const OVERSCAN = 6;
const PAGE = 100;

/** datetime-local (the operator's time zone) -> ISO UTC, or undefined when empty. */
const toIso = (v: string) => (v ? new Date(v).toISOString() : undefined);

export function AuditPage() {
  useTitle('Audit');
  const [draft, setDraft] = useState({ actor: '', action: '', target: '', since: '', until: '' });
  const [filter, setFilter] = useState<AuditFilter>({});
  const [items, setItems] = useState<AuditRow[]>([]);
  const [next, setNext] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(false);
  const [error, setError] = useState<unknown>(null);
  const [selected, setSelected] = useState<AuditRow | null>(null);
  const [scrollTop, setScrollTop] = useState(0);
  const generation = useRef(0);
  const apps = useLoad(() => api.allApps());
  const idOfName = (t: string) => apps.data?.find((a) => a.name === t)?.id ?? t;

  const load = async (f: AuditFilter, cursor?: string) => {
    const gen = cursor ? generation.current : ++generation.current;
    setLoading(true);
    try {
      const r = await api.queryAudit(f, cursor, PAGE);
      if (gen !== generation.current) return;
      setItems((prev) => (cursor ? [...prev, ...r.items] : r.items));
      setNext(r.next_cursor);
      setError(null);
    } catch (e) {
      setError(e);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => void load(filter), [filter]);

  const first = Math.max(0, Math.floor(scrollTop / ROW_HEIGHT) - OVERSCAN);
  const last = Math.min(items.length, Math.ceil((scrollTop + VIEW_HEIGHT) / ROW_HEIGHT) + OVERSCAN);
  // Near the end of what is loaded: fetch the next page.
  useEffect(() => {
    if (next && !loading && last >= items.length - OVERSCAN) void load(filter, next);
  }, [last, next, loading]);

  const refresh = async (keep?: string) => {
    await load(filter);
    if (keep)
      setSelected((s) =>
        s && s.id === keep ? { ...s, revertible: false, reverted_at: new Date().toISOString() } : s,
      );
  };

  return (
    <main>
      <h1>Audit</h1>
      <section class="card">
        <form
          class="filters"
          aria-label="Filter the audit log"
          onSubmit={(e) => {
            e.preventDefault();
            setSelected(null);
            setFilter({
              actor: draft.actor.trim() || undefined,
              action: draft.action.trim() || undefined,
              // An app is named; the API filters by id.
              target: idOfName(draft.target.trim()) || undefined,
              since: toIso(draft.since),
              until: toIso(draft.until),
            });
          }}
        >
          <label>
            Actor
            <input
              name="actor"
              value={draft.actor}
              onInput={(e) => setDraft({ ...draft, actor: (e.target as HTMLInputElement).value })}
              placeholder="username or token name"
            />
          </label>
          <label>
            Action
            <input
              name="action"
              value={draft.action}
              onInput={(e) => setDraft({ ...draft, action: (e.target as HTMLInputElement).value })}
              placeholder="PUT /api/apps/{id}/env"
            />
          </label>
          <label>
            App or target
            <input
              name="target"
              list="audit-apps"
              value={draft.target}
              onInput={(e) => setDraft({ ...draft, target: (e.target as HTMLInputElement).value })}
              placeholder="an app's name, or an id"
            />
            <datalist id="audit-apps">
              {(apps.data ?? []).map((a) => (
                <option key={a.id} value={a.name} />
              ))}
            </datalist>
          </label>
          <label>
            From
            <input
              name="since"
              type="datetime-local"
              value={draft.since}
              onInput={(e) => setDraft({ ...draft, since: (e.target as HTMLInputElement).value })}
            />
          </label>
          <label>
            Until
            <input
              name="until"
              type="datetime-local"
              value={draft.until}
              onInput={(e) => setDraft({ ...draft, until: (e.target as HTMLInputElement).value })}
            />
          </label>
          <div class="row">
            <button type="submit" class="primary">
              Apply
            </button>
            <button
              type="button"
              onClick={() => {
                setDraft({ actor: '', action: '', target: '', since: '', until: '' });
                setFilter({});
              }}
            >
              Clear
            </button>
          </div>
        </form>
        <ErrorNote error={error} />
        <p class="muted" aria-live="polite">
          {items.length} entries{next ? ' loaded (more on scroll)' : ''}
        </p>
        <div class="audit-head" aria-hidden="true">
          <span>When</span>
          <span>Who</span>
          <span>Action</span>
          <span>Target</span>
          <span>Outcome</span>
          <span />
        </div>
        <div
          class="audit-viewport"
          data-testid="audit-viewport"
          tabIndex={0}
          aria-label="Audit entries, newest first"
          style={{ height: `${VIEW_HEIGHT}px`, overflowY: 'auto', position: 'relative' }}
          onScroll={(e) => setScrollTop((e.target as HTMLElement).scrollTop)}
        >
          <ul
            class="audit-list"
            style={{
              height: `${items.length * ROW_HEIGHT}px`,
              position: 'relative',
              margin: 0,
              padding: 0,
              listStyle: 'none',
            }}
          >
            {items.slice(first, last).map((e, i) => (
              <li
                key={e.id}
                data-testid="audit-row"
                data-id={e.id}
                aria-setsize={items.length}
                aria-posinset={first + i + 1}
                class={`audit-row${selected?.id === e.id ? ' selected' : ''}`}
                style={{
                  position: 'absolute',
                  top: `${(first + i) * ROW_HEIGHT}px`,
                  left: 0,
                  right: 0,
                  height: `${ROW_HEIGHT}px`,
                }}
              >
                <span>
                  <When at={e.at} />
                </span>
                <span class="ellipsis">
                  {e.actor.name ?? e.actor.type}
                  {e.actor.type !== 'user' ? <span class="muted"> ({e.actor.type})</span> : null}
                </span>
                <span class="ellipsis" title={e.action}>
                  {e.summary}
                </span>
                <span class={`ellipsis${e.target_name ? '' : ' mono'}`} title={e.target.id ?? e.target.type}>
                  {e.target_name ?? (e.target.id ? `${e.target.type} ${e.target.id}` : e.target.type)}
                </span>
                <span>
                  {e.outcome}
                  <span class="muted"> {e.status}</span>
                  {e.reverted_at ? <span class="muted"> · reverted</span> : null}
                </span>
                <span>
                  {e.state_kind ? (
                    <button
                      type="button"
                      aria-pressed={selected?.id === e.id}
                      aria-label={`Changes of entry ${e.id} (${e.action})`}
                      onClick={() => setSelected(e)}
                    >
                      Changes
                    </button>
                  ) : null}
                </span>
              </li>
            ))}
          </ul>
        </div>
        {next && (
          <button type="button" disabled={loading} onClick={() => void load(filter, next)}>
            Older entries
          </button>
        )}
      </section>
      {selected && <EntryDetail key={selected.id} entry={selected} onReverted={(id) => void refresh(id)} />}
    </main>
  );
}

function show(v: unknown): string {
  if (v === undefined) return '';
  if (v === null) return 'null';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function EntryDetail({ entry, onReverted }: { entry: AuditRow; onReverted: (id: string) => void }) {
  const [diff, setDiff] = useState<{ rows: AuditDiffRow[]; changed_since: boolean } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [done, setDone] = useState<string | null>(null);
  useEffect(() => {
    api.auditDiff(entry.id).then(setDiff, setError);
  }, [entry.id]);
  const changes = diff?.rows.filter((r) => r.status !== 'unchanged') ?? [];
  return (
    <section class="card" aria-labelledby="audit-detail-title" data-testid="audit-detail">
      <h2 id="audit-detail-title">
        Entry {entry.id}: <span class="mono">{entry.action}</span>
      </h2>
      <p>
        {entry.summary}
        {entry.user && entry.actor.type === 'token' ? ` (token of ${entry.user.username})` : ''}
      </p>
      <ErrorNote error={error} />
      {diff && (
        <>
          {diff.changed_since && (
            <p class="warning" role="status">
              The target changed after this entry.
            </p>
          )}
          <table data-testid="audit-diff">
            <caption class="muted">
              {changes.length} field(s) changed
              {diff.rows.length > changes.length ? `, ${diff.rows.length - changes.length} unchanged` : ''}
            </caption>
            <thead>
              <tr>
                <th scope="col">Field</th>
                <th scope="col">Change</th>
                <th scope="col">Before</th>
                <th scope="col">After</th>
              </tr>
            </thead>
            <tbody>
              {changes.map((r) => (
                <tr key={r.field} class={`diff-${r.status}`}>
                  <td class="mono">{r.field}</td>
                  <td>{r.status}</td>
                  <td class="mono">{r.masked ? <span class="muted">secret</span> : show(r.before)}</td>
                  <td class="mono">{r.masked ? <span class="muted">secret</span> : show(r.after)}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </>
      )}
      {done ? (
        <p role="status">Reverted: entry {done} records the revert.</p>
      ) : entry.reverted_at ? (
        <p class="muted">
          Reverted <When at={entry.reverted_at} />
          {entry.reverted_by ? ` by entry ${entry.reverted_by}` : ''}.
        </p>
      ) : entry.revertible ? (
        <RevertButton
          entry={entry}
          onDone={(id) => {
            setDone(id);
            onReverted(entry.id);
          }}
        />
      ) : null}
    </section>
  );
}

function RevertButton({ entry, onDone }: { entry: AuditRow; onDone: (auditId: string) => void }) {
  const ref = useRef<HTMLDialogElement>(null);
  const [open, setOpen] = useState(false);
  const [conflict, setConflict] = useState<string | null>(null);
  const act = useAction();
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) d.showModal();
    if (!open && d.open) d.close();
  }, [open]);
  const close = () => {
    setOpen(false);
    setConflict(null);
    act.clear();
  };
  const revert = (force: boolean) =>
    act.run(async () => {
      try {
        const r = await api.revertAudit(entry.id, force);
        close();
        onDone(r.audit_id);
      } catch (e) {
        if (e instanceof ApiError && e.status === 409 && !force) {
          setConflict(errorText(e));
          return;
        }
        throw e;
      }
    });
  return (
    <>
      <button type="button" class="danger" onClick={() => setOpen(true)}>
        Revert…
      </button>
      <dialog
        ref={ref}
        class="dialog"
        aria-labelledby={`revert-title-${entry.id}`}
        onCancel={(e) => {
          e.preventDefault();
          close();
        }}
      >
        <h2 id={`revert-title-${entry.id}`}>Revert entry {entry.id}?</h2>
        <p>
          This puts <span class="mono">{entry.target.id ?? entry.target.type}</span> back to its state before{' '}
          <span class="mono">{entry.action}</span>, through the same checks as the original change. The revert
          is audited.
        </p>
        {conflict && (
          <p class="error" role="alert" data-testid="revert-conflict">
            {conflict}
          </p>
        )}
        <ErrorNote error={act.error} />
        <div class="row">
          {conflict ? (
            <button type="button" class="danger" disabled={act.busy} onClick={() => void revert(true)}>
              Revert anyway
            </button>
          ) : (
            <button type="button" class="danger" disabled={act.busy} onClick={() => void revert(false)}>
              Revert
            </button>
          )}
          <button type="button" onClick={close}>
            Cancel
          </button>
        </div>
      </dialog>
    </>
  );
}
