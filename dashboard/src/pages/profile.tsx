// Profile: the signed-in operator, two-factor enrolment with its recovery codes, and the live
// sessions with a revoke for each, and a password change (which ends the other sessions).
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { User } from '../api';
import { QrCode } from '../qr';
import { Badge, ErrorNote, When, useAction, useLoad } from '../ui';
import { useTitle } from '../title';

export function ProfilePage({ user }: { user: User }) {
  useTitle('Profile');
  return (
    <main>
      <h1>Profile</h1>
      <div class="grid">
        <section class="card" aria-labelledby="me-h">
          <h2 id="me-h">Operator</h2>
          <p>
            Signed in as <strong>{user.username}</strong>.
          </p>
          {user.sso ? (
            <p class="muted">You sign in with your identity provider: there is no password here to change.</p>
          ) : (
            <PasswordForm />
          )}
        </section>
        <Totp user={user} />
        <Sessions />
      </div>
    </main>
  );
}

function PasswordForm() {
  const [current, setCurrent] = useState('');
  const [next, setNext] = useState('');
  const [done, setDone] = useState(false);
  const act = useAction();
  return (
    <form
      class="stack"
      aria-labelledby="password-h"
      onSubmit={(e) => {
        e.preventDefault();
        setDone(false);
        void act.run(async () => {
          await api.changePassword(current, next);
          setCurrent('');
          setNext('');
          setDone(true);
        });
      }}
    >
      <h3 id="password-h">Password</h3>
      <label>
        Current password
        <input
          type="password"
          name="current-password"
          autoComplete="current-password"
          required
          value={current}
          onInput={(e) => setCurrent((e.target as HTMLInputElement).value)}
        />
      </label>
      <label>
        New password
        <input
          type="password"
          name="new-password"
          autoComplete="new-password"
          required
          minLength={12}
          value={next}
          onInput={(e) => setNext((e.target as HTMLInputElement).value)}
        />
      </label>
      <button type="submit" disabled={act.busy}>
        Change password
      </button>
      {done && (
        <p role="status" class="small">
          Password changed. Your other sessions were signed out.
        </p>
      )}
      <ErrorNote error={act.error} />
    </form>
  );
}

function Totp({ user }: { user: User }) {
  const [enrol, setEnrol] = useState<{ secret: string; url: string } | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [enabled, setEnabled] = useState(user.totp_enabled);
  const [code, setCode] = useState('');
  const act = useAction();
  return (
    <section class="card" aria-labelledby="totp-h">
      <h2 id="totp-h">Two-factor authentication</h2>
      <p>
        Status: <Badge status={enabled ? 'enabled' : 'disabled'} />
      </p>
      {!enabled && !enrol && (
        <button
          type="button"
          disabled={act.busy}
          onClick={() =>
            act.run(async () => {
              const t = await api.totpSetup();
              setEnrol({ secret: t.secret, url: t.otpauth_url });
            })
          }
        >
          Set up TOTP
        </button>
      )}
      {enrol && !enabled && (
        <div class="stack">
          <QrCode text={enrol.url} label="QR code of the TOTP secret" />
          <p>
            Secret: <code class="secret">{enrol.secret}</code>
          </p>
          <form
            class="row wrap"
            onSubmit={(e) => {
              e.preventDefault();
              void act.run(async () => {
                const r = await api.totpEnable(code.trim());
                setCodes(r.recovery_codes);
                setEnabled(true);
                setEnrol(null);
              });
            }}
          >
            <label>
              Code
              <input
                name="totp-code"
                inputMode="numeric"
                autoComplete="one-time-code"
                required
                value={code}
                onInput={(e) => setCode((e.target as HTMLInputElement).value)}
              />
            </label>
            <button type="submit" class="primary" disabled={act.busy}>
              Enable
            </button>
          </form>
        </div>
      )}
      {codes && (
        <div class="notice">
          <h3>Recovery codes</h3>
          <p class="small">Each signs you in once. Shown only now: save them.</p>
          <ul class="codes" data-testid="recovery-codes">
            {codes.map((c) => (
              <li key={c}>
                <code>{c}</code>
              </li>
            ))}
          </ul>
        </div>
      )}
      {enabled && !codes && (
        <p class="muted small">
          Recovery codes sign you in once each when the authenticator is lost. Lost them, or used some? Make
          new ones (the old ones stop working).
        </p>
      )}
      {enabled && (
        <div class="row wrap">
          <button
            type="button"
            disabled={act.busy}
            onClick={() =>
              confirm('Make new recovery codes? The ones you have stop working at once.') &&
              void act.run(async () => setCodes((await api.regenerateRecoveryCodes()).recovery_codes))
            }
          >
            New recovery codes
          </button>
          <button
            type="button"
            class="danger"
            disabled={act.busy}
            onClick={() =>
              confirm('Turn two-factor authentication off? Sign-ins then need only your password.') &&
              void act.run(async () => {
                await api.disableTotp();
                setEnabled(false);
                setCodes(null);
                setCode('');
              })
            }
          >
            Turn two-factor off
          </button>
        </div>
      )}
      <ErrorNote error={act.error} />
    </section>
  );
}

function Sessions() {
  const sessions = useLoad(() => api.listSessions().then((r) => r.items));
  const act = useAction();
  return (
    <section class="card wide" aria-labelledby="sessions-h">
      <h2 id="sessions-h">Sessions</h2>
      <ErrorNote error={sessions.error} />
      <ErrorNote error={act.error} />
      {sessions.data && (
        <table class="stack-sm">
          <thead>
            <tr>
              <th>Signed in</th>
              <th>Last seen</th>
              <th>From</th>
              <th>
                <span class="sr-only">Actions</span>
              </th>
            </tr>
          </thead>
          <tbody>
            {sessions.data.map((x) => (
              <tr key={x.id} data-testid="session-row">
                <td>
                  <When at={x.created_at} />
                  {x.current && (
                    <>
                      {' '}
                      <Badge status="current" />
                    </>
                  )}
                </td>
                <td>
                  <When at={x.last_seen_at} />
                </td>
                <td class="session-from">
                  <span class="mono">{x.ip ?? '—'}</span>
                  <div class="muted small clamp" title={x.user_agent ?? ''}>
                    {x.user_agent ?? ''}
                  </div>
                </td>
                <td>
                  {!x.current && (
                    <button
                      type="button"
                      class="danger"
                      disabled={act.busy}
                      onClick={() =>
                        act.run(async () => {
                          await api.revokeSession(x.id);
                          await sessions.reload();
                        })
                      }
                    >
                      Revoke <span class="sr-only">the session from {x.ip ?? 'an unknown address'}</span>
                    </button>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
