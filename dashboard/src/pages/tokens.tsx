// API tokens: create (the value is shown once), list, revoke. Creating one needs a step-up.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { NewApiToken } from '../api';
import { ErrorNote, When, useAction, useLoad } from '../ui';

const EXPIRY: Array<[string, number | null]> = [
  ['7 days', 7],
  ['30 days', 30],
  ['90 days', 90],
  ['1 year', 365],
  ['never', null],
];

export function TokensPage() {
  const tokens = useLoad(() => api.listTokens().then((r) => r.items));
  const [name, setName] = useState('');
  const [days, setDays] = useState('30');
  const [created, setCreated] = useState<NewApiToken | null>(null);
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
              setCreated(await api.createToken(name.trim(), expires));
              setName('');
              await tokens.reload();
            });
          }}
        >
          <label>
            Name
            <input name="token_name" required maxLength={64} value={name} onInput={(e) => setName((e.target as HTMLInputElement).value)} />
          </label>
          <label>
            Expires in
            <select name="token_expiry" value={days} onChange={(e) => setDays((e.target as HTMLSelectElement).value)}>
              {EXPIRY.map(([label, d]) => (
                <option key={label} value={d === null ? 'never' : String(d)}>
                  {label}
                </option>
              ))}
            </select>
          </label>
          <button type="submit" class="primary" disabled={act.busy}>
            Create
          </button>
        </form>
        <ErrorNote error={act.error} />
        {created && (
          <div class="notice" role="status" data-testid="new-token">
            <p>
              Token <strong>{created.name}</strong> (expires: {created.expires_at ? <When at={created.expires_at} /> : 'never'}). Copy it now: it is not shown again.
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
          <table>
            <thead>
              <tr>
                <th>Name</th>
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
                  <td>
                    <When at={t.created_at} />
                  </td>
                  <td>{t.expires_at ? <When at={t.expires_at} /> : 'never'}</td>
                  <td>
                    <When at={t.last_used_at} />
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
