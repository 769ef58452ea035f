// Apps: every app a page at a time (the API's `?cursor=&limit=`, so 1,000 apps cost what their
// first page costs), with status, URL and the last deploy (when, by whom, which commit), a search
// by name (asked of the API), live statuses, and, for those who may, a new app, an app from a
// template (add-ons) and an import of an exported app.
import { useEffect, useRef, useState } from 'preact/hooks';
import * as api from '../api';
import type { AppListItem } from '../api';
import { Link, navigate } from '../router';
import { useTopic } from '../ws';
import { useCan } from '../access';
import { AppBadge, ownStatus } from '../status';
import { AppUrls, ProxyNotice } from '../proxy';
import { formErrors } from '../form-errors';
import { useTitle } from '../title';
import { Ago, Badge, ErrorNote, FormNote, useAction, useThrottled } from '../ui';
import { NewApp } from './new-app';

/** Rows asked for at a time: the first page is what the first paint waits for. */
export const APPS_PAGE = 50;
const SEARCH_DELAY_MS = 200;

interface Listing {
  items: AppListItem[];
  next?: string;
  total: number;
  proxy: api.AppsPage['proxy'] | null;
}

/** `value` once it stopped changing for `ms` (a search asked for once typing pauses). */
function useSettled(value: string, ms: number): string {
  const [settled, setSettled] = useState(value);
  useEffect(() => {
    const t = setTimeout(() => setSettled(value), ms);
    return () => clearTimeout(t);
  }, [value, ms]);
  return settled;
}

function useAppPages(q: string) {
  const [list, setList] = useState<Listing | null>(null);
  const [error, setError] = useState<unknown>(null);
  const [loading, setLoading] = useState(false);
  const generation = useRef(0);
  const load = async (cursor?: string) => {
    const gen = cursor ? generation.current : ++generation.current;
    setLoading(true);
    try {
      const r = await api.listApps({ limit: APPS_PAGE, ...(q ? { q } : {}), ...(cursor ? { cursor } : {}) });
      if (gen !== generation.current) return;
      setList((prev) => ({
        items: cursor && prev ? [...prev.items, ...r.items] : r.items,
        next: r.next_cursor,
        total: r.total,
        proxy: r.proxy,
      }));
      setError(null);
    } catch (e) {
      setError(e);
    } finally {
      setLoading(false);
    }
  };
  useEffect(() => void load(), [q]);
  return { list, setList, error, loading, more: () => list?.next && load(list.next), reload: () => load() };
}

export function AppsPage() {
  useTitle('Apps');
  const can = useCan();
  const [draft, setDraft] = useState('');
  const q = useSettled(draft.trim(), SEARCH_DELAY_MS);
  const pages = useAppPages(q);
  const list = pages.list;
  const reloadSoon = useThrottled(() => void pages.reload(), 1_000);
  useTopic('apps', (d: any) => {
    if (!list) return;
    const row = list.items.find((a) => a.id === d?.app_id);
    const status = row ? ownStatus(d, row.id) : null;
    if (row && status)
      pages.setList({ ...list, items: list.items.map((a) => (a === row ? { ...a, status } : a)) });
    else if (d?.type === 'status' && !d.parent_app_id) reloadSoon();
  });
  useTopic('deployments', (d: any) => {
    if (d?.type === 'status' && list?.items.some((a) => a.id === d.app_id)) reloadSoon();
  });
  const [adding, setAdding] = useState<Adding>(null);

  return (
    <main>
      <div class="row spread wrap">
        <h1>Apps</h1>
        {can('app.admin') && <AddActions adding={adding} onAdding={setAdding} />}
      </div>
      <ProxyNotice proxy={list?.proxy} />
      {adding === 'new' && <NewApp onCreated={(a) => navigate(`/apps/${encodeURIComponent(a.id)}`)} />}
      {adding === 'import' && <ImportApp />}
      <section class="card" aria-labelledby="apps-list-h">
        <div class="row spread wrap">
          <h2 id="apps-list-h">
            {list ? `${list.total} app${list.total === 1 ? '' : 's'}${q ? ` matching “${q}”` : ''}` : 'Apps'}
          </h2>
          <label class="inline search">
            <span class="sr-only">Search apps by name</span>
            <input
              type="search"
              name="q"
              placeholder="Search by name"
              value={draft}
              onInput={(e) => setDraft((e.target as HTMLInputElement).value)}
            />
          </label>
        </div>
        <ErrorNote error={pages.error} />
        {list && list.items.length === 0 && (
          <p class="muted">{q ? 'No app has that in its name.' : 'No apps yet.'}</p>
        )}
        {list && list.items.length > 0 && <AppsTable items={list.items} />}
        {list?.next && (
          <p>
            <button type="button" disabled={pages.loading} onClick={() => void pages.more()}>
              Show {Math.min(APPS_PAGE, list.total - list.items.length)} more
            </button>{' '}
            <span class="muted small" role="status">
              {list.items.length} of {list.total} shown
            </span>
          </p>
        )}
        {!list && !pages.error && <p class="muted">Loading…</p>}
      </section>
    </main>
  );
}

type Adding = 'new' | 'import' | null;

/** A new app, one from a template, or an import: for those who may create apps. */
function AddActions({ adding, onAdding }: { adding: Adding; onAdding: (a: Adding) => void }) {
  return (
    <div class="row wrap">
      <button
        type="button"
        aria-expanded={adding === 'new'}
        onClick={() => onAdding(adding === 'new' ? null : 'new')}
      >
        New app
      </button>
      <Link href="/addons" class="button">
        From a template
      </Link>
      <button
        type="button"
        aria-expanded={adding === 'import'}
        onClick={() => onAdding(adding === 'import' ? null : 'import')}
      >
        Import
      </button>
    </div>
  );
}

function AppsTable({ items }: { items: AppListItem[] }) {
  return (
    <table class="apps-table">
      <thead>
        <tr>
          <th>Name</th>
          <th>Status</th>
          <th>URL</th>
          <th class="wide-only">Last deploy</th>
        </tr>
      </thead>
      <tbody>
        {items.map((a) => (
          <tr key={a.id} data-testid="apps-row">
            <td>
              <Link href={`/apps/${encodeURIComponent(a.id)}`}>{a.name}</Link>
              <div class="muted small narrow-only">
                <LastDeploy d={a.last_deployment} />
              </div>
            </td>
            <td>
              <AppBadge status={a.status} />
            </td>
            <td class="url-cell">
              <AppUrls urls={a.urls} first />
            </td>
            <td class="wide-only small">
              <LastDeploy d={a.last_deployment} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

function LastDeploy({ d }: { d: AppListItem['last_deployment'] }) {
  if (!d) return <span class="muted">never deployed</span>;
  return (
    <span data-testid="last-deploy">
      <Ago at={d.created_at} /> by{' '}
      {d.created_by ?? (d.trigger === 'push' || d.trigger === 'tag' ? 'a push' : 'the system')}
      {d.commit && <span class="mono"> · {d.commit.slice(0, 7)}</span>}
      {d.status !== 'succeeded' && (
        <>
          {' '}
          <Badge status={d.status} />
        </>
      )}
    </span>
  );
}

/** An app from an exported spec (its JSON pasted or chosen as a file): secrets are not in it. */
function ImportApp() {
  const [text, setText] = useState('');
  const act = useAction();
  const errors = formErrors(act.error, { name: 'Name', source: 'Source' }, { conflict: 'name' });
  return (
    <section class="card" aria-labelledby="import-h">
      <h2 id="import-h">Import an app</h2>
      <p class="muted small">
        An app exported from an app's page (its JSON). Secret values are never exported: set them after the
        import.
      </p>
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            let spec: unknown;
            try {
              spec = JSON.parse(text);
            } catch {
              throw new Error('This is not the JSON of an exported app');
            }
            const r = await api.importApp(spec);
            navigate(`/apps/${encodeURIComponent(r.app.id)}`);
          });
        }}
      >
        <label>
          Exported app (JSON)
          <textarea
            name="spec"
            rows={6}
            class="mono"
            spellcheck={false}
            value={text}
            onInput={(e) => setText((e.target as HTMLTextAreaElement).value)}
          />
        </label>
        <label>
          Or a file
          <input
            type="file"
            accept="application/json,.json"
            onChange={async (e) => {
              const f = (e.target as HTMLInputElement).files?.[0];
              if (f) setText(await f.text());
            }}
          />
        </label>
        {errors.field('name') && <p class="error">{errors.field('name')}</p>}
        <FormNote errors={errors} />
        <div class="row">
          <button type="submit" class="primary" disabled={act.busy || !text.trim()}>
            Import
          </button>
        </div>
      </form>
    </section>
  );
}
