// The audit log, newest first, paged with the server's cursor.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { AuditEntry } from '../api';
import { ErrorNote, When, useAction, useLoad } from '../ui';

export function AuditPage() {
  const first = useLoad(() => api.listAudit());
  const [more, setMore] = useState<AuditEntry[]>([]);
  const [cursor, setCursor] = useState<string | undefined | null>(null);
  const act = useAction();
  const items = [...(first.data?.items ?? []), ...more];
  const next = cursor === null ? first.data?.next_cursor : cursor;
  const [filter, setFilter] = useState('');
  const f = filter.trim().toLowerCase();
  const shown = f ? items.filter((e) => `${e.action} ${e.actor.username ?? ''} ${e.target ?? ''}`.toLowerCase().includes(f)) : items;
  return (
    <main>
      <h1>Audit</h1>
      <section class="card">
        <label>Filter<input type="search" name="audit_filter" value={filter} onInput={(e) => setFilter((e.target as HTMLInputElement).value)} /></label>
        <ErrorNote error={first.error ?? act.error} />
        <table>
          <thead><tr><th>When</th><th>Who</th><th>Action</th><th>Target</th><th>Outcome</th></tr></thead>
          <tbody>
            {shown.map((e) => (
              <tr key={e.id} data-testid="audit-row">
                <td><When at={e.at} /></td>
                <td>{e.actor.username ?? 'system'}{e.actor.via ? <span class="muted"> ({e.actor.via})</span> : null}</td>
                <td class="mono">{e.action}</td>
                <td class="mono ellipsis">{e.target ?? '—'}</td>
                <td>{String(e.outcome)}</td>
              </tr>
            ))}
          </tbody>
        </table>
        {next && (
          <button type="button" disabled={act.busy} onClick={() => void act.run(async () => {
            const r = await api.listAudit(next);
            setMore([...more, ...r.items]);
            setCursor(r.next_cursor);
          })}>Older entries</button>
        )}
      </section>
    </main>
  );
}
