// API tokens: create (the value is shown once), list, revoke. Creating one needs a step-up.
// A token may be narrowed to some of its creator's permissions and to some apps; nothing ticked
// leaves it following its owner (every permission and app they hold, as that changes).
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { NewApiToken } from '../api';
import { ErrorNote, When, useAction, useLoad } from '../ui';
import { useTitle } from '../title';
import { PERMISSION_LABELS, heldPermissions, type Permission } from '../permissions';

const EXPIRY: Array<[string, number | null]> = [
  ['7 days', 7],
  ['30 days', 30],
  ['90 days', 90],
  ['1 year', 365],
  ['never', null],
];

export function TokensPage() {
  useTitle('Tokens');
  const tokens = useLoad(() => api.listTokens().then((r) => r.items));
  const [name, setName] = useState('');
  const [days, setDays] = useState('30');
  const [created, setCreated] = useState<NewApiToken | null>(null);
  const held = useLoad(() =>
    api.me().then((m) => heldPermissions(m as Parameters<typeof heldPermissions>[0])),
  );
  const apps = useLoad(() => api.allApps());
  const [scopes, setScopes] = useState<Set<Permission>>(new Set());
  const [appIds, setAppIds] = useState<Set<string>>(new Set());
  const appName = (id: string) => apps.data?.find((a) => a.id === id)?.name ?? id;
  const act = useAction();
  return (
    <main>
      <h1>API tokens</h1>
      <section class="card" aria-labelledby="new-token-h">
        <h2 id="new-token-h">New token</h2>
        <form
          class="row wrap"
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              const d = days === 'never' ? null : Number(days);
              const expires = d === null ? null : new Date(Date.now() + d * 86_400_000).toISOString();
              const picked = held.data?.filter((p) => scopes.has(p)) ?? [];
              const pickedApps = apps.data?.filter((a) => appIds.has(a.id)).map((a) => a.id) ?? [];
              setCreated(
                await api.createToken(
                  name.trim(),
                  expires,
                  picked.length ? picked : null,
                  pickedApps.length ? pickedApps : null,
                ),
              );
              setName('');
              setScopes(new Set());
              setAppIds(new Set());
              await tokens.reload();
            });
          }}
        >
          <label>
            Name
            <input
              name="token_name"
              required
              maxLength={64}
              value={name}
              onInput={(e) => setName((e.target as HTMLInputElement).value)}
            />
          </label>
          <label>
            Expires in
            <select
              name="token_expiry"
              value={days}
              onChange={(e) => setDays((e.target as HTMLSelectElement).value)}
            >
              {EXPIRY.map(([label, d]) => (
                <option key={label} value={d === null ? 'never' : String(d)}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <fieldset class="choices" aria-describedby="scopes-hint">
            <legend>Scopes</legend>
            <p id="scopes-hint" class="muted">
              None ticked: every permission you hold.
            </p>
            {held.data?.map((p) => (
              <label class="inline" key={p}>
                <input
                  type="checkbox"
                  name="token_scope"
                  value={p}
                  checked={scopes.has(p)}
                  onChange={() => setScopes(toggled(scopes, p))}
                />{' '}
                {PERMISSION_LABELS[p]} <code>{p}</code>
              </label>
            ))}
          </fieldset>
          <fieldset class="choices" aria-describedby="apps-hint">
            <legend>Apps</legend>
            <p id="apps-hint" class="muted">
              None ticked: every app you can reach.
            </p>
            {apps.data?.length === 0 && <p class="muted">No apps yet.</p>}
            {apps.data?.map((a) => (
              <label class="inline" key={a.id}>
                <input
                  type="checkbox"
                  name="token_app"
                  value={a.id}
                  checked={appIds.has(a.id)}
                  onChange={() => setAppIds(toggled(appIds, a.id))}
                />{' '}
                {a.name}
              </label>
            ))}
          </fieldset>
          <button type="submit" class="primary" disabled={act.busy}>
            Create
          </button>
        </form>
        <ErrorNote error={held.error ?? apps.error} />
        <ErrorNote error={act.error} />
        {created && (
          <div class="notice" role="status" data-testid="new-token">
            <p>
              Token <strong>{created.name}</strong> (expires:{' '}
              {created.expires_at ? <When at={created.expires_at} /> : 'never'}; scopes:{' '}
              {created.scopes?.join(', ') ?? 'all yours'}). Copy it now: it is not shown again.
            </p>
            <code class="secret" data-testid="token-value">
              {created.token}
            </code>
            <div class="row">
              <button type="button" onClick={() => void navigator.clipboard?.writeText(created.token)}>
                Copy
              </button>
              <button type="button" onClick={() => setCreated(null)}>
                Done
              </button>
            </div>
          </div>
        )}
      </section>
      <section class="card" aria-labelledby="tokens-h">
        <h2 id="tokens-h">Tokens</h2>
        <ErrorNote error={tokens.error} />
        {tokens.data?.length === 0 && <p class="muted">No tokens.</p>}
        {tokens.data && tokens.data.length > 0 && (
          <table class="stack-sm">
            <thead>
              <tr>
                <th>Name</th>
                <th>Scopes</th>
                <th>Apps</th>
                <th>Created</th>
                <th>Expires</th>
                <th>Last used</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {tokens.data.map((t) => (
                <tr key={t.id} data-testid="token-row">
                  <td>{t.name}</td>
                  <td data-testid="token-scopes">
                    {t.scopes ? t.scopes.join(', ') : <span class="muted">all yours</span>}
                  </td>
                  <td data-testid="token-apps">
                    {t.app_ids ? t.app_ids.map(appName).join(', ') : <span class="muted">all yours</span>}
                  </td>
                  <td>
                    <When at={t.created_at} />
                  </td>
                  <td>{t.expires_at ? <When at={t.expires_at} /> : 'never'}</td>
                  <td data-testid="token-last-used">
                    {t.last_used_at ? <When at={t.last_used_at} /> : <span class="muted">never</span>}
                  </td>
                  <td>
                    <button
                      type="button"
                      class="danger"
                      onClick={() => {
                        if (!confirm(`Revoke ${t.name}? Scripts using it stop working at once.`)) return;
                        void act.run(async () => {
                          await api.revokeToken(t.id);
                          await tokens.reload();
                        });
                      }}
                    >
                      Revoke
                    </button>
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
    </main>
  );
}

function toggled<T>(set: Set<T>, v: T): Set<T> {
  const n = new Set(set);
  if (n.has(v)) n.delete(v);
  else n.add(v);
  return n;
}
