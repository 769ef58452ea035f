// The page an invitation or reset link opens (/invite/<token>): public. An invitation asks for a
// username and a password and creates the operator; a reset link asks for a new password only.
// Either way the person is signed in afterwards.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { User } from '../api';
import { ErrorNote, When, useAction, useLoad } from '../ui';
import { useTitle } from '../title';
import { TotpEnrol } from './totp-enrol';

export function InvitePage({ token, onDone }: { token: string; onDone: (u: User) => void }) {
  const info = useLoad(() => api.openInvitation(token), [token]);
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [again, setAgain] = useState('');
  const act = useAction();
  const [joined, setJoined] = useState<User | null>(null);
  const reset = info.data?.kind === 'reset';
  useTitle(reset ? 'New password' : 'Invitation');
  // A new operator signs in here for the first time: offer a second factor before going on.
  if (joined && !reset && !joined.totp_enabled && !joined.sso)
    return (
      <main class="narrow">
        <h1>Welcome, {joined.username}</h1>
        <TotpEnrol password={password} onDone={() => onDone(joined)} />
      </main>
    );
  if (info.error) {
    return (
      <main class="narrow">
        <h1>Invitation</h1>
        <p class="error" role="alert">
          This link is unknown, already used or expired. Ask an owner or admin for a new one.
        </p>
        <p>
          <a href="/">Sign in</a>
        </p>
      </main>
    );
  }
  if (!info.data) {
    return (
      <main class="narrow">
        <p class="muted">Loading…</p>
      </main>
    );
  }
  return (
    <main class="narrow">
      <h1>{reset ? 'Set a new password' : 'Join as an operator'}</h1>
      <p data-testid="invite-summary">
        {reset ? (
          <>
            A new password for <strong>{info.data.username}</strong>; two-factor authentication is turned off
            (set it up again from your profile).
          </>
        ) : (
          <>
            You are invited as <strong>{info.data.role}</strong>.
          </>
        )}{' '}
        The link works once, until <When at={info.data.expires_at} />.
      </p>
      <form
        class="card stack"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            if (password !== again) throw new Error('The two passwords differ');
            const r = await api.acceptInvitation(
              token,
              reset ? { password } : { username: username.trim(), password },
            );
            if (reset) onDone(r.user);
            else setJoined(r.user);
          });
        }}
      >
        {!reset && (
          <label>
            Username
            <input
              name="username"
              autoComplete="username"
              required
              maxLength={64}
              value={username}
              onInput={(e) => setUsername((e.target as HTMLInputElement).value)}
            />
          </label>
        )}
        <label>
          {reset ? 'New password' : 'Password'}
          <input
            name="password"
            type="password"
            autoComplete="new-password"
            required
            minLength={12}
            value={password}
            onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
          />
        </label>
        <label>
          Repeat the password
          <input
            name="password_again"
            type="password"
            autoComplete="new-password"
            required
            minLength={12}
            value={again}
            onInput={(e) => setAgain((e.target as HTMLInputElement).value)}
          />
        </label>
        <ErrorNote error={act.error} />
        <button type="submit" class="primary" disabled={act.busy}>
          {reset ? 'Set password and sign in' : 'Create my account'}
        </button>
      </form>
    </main>
  );
}
