// Sign in: password first; when the operator has TOTP, the server answers totp_required and the code follows.
// With an OpenID Connect provider configured, a link to sign in there instead.
import { useEffect, useState } from 'preact/hooks';
import * as api from '../api';
import type { User } from '../api';
import { ErrorNote, useAction } from '../ui';
import { noteTotpSignIn } from '../stepup';
import { useTitle } from '../title';

export function LoginPage({ onDone }: { onDone: (u: User) => void }) {
  const [stage, setStage] = useState<'password' | 'totp'>('password');
  const [username, setUsername] = useState('');
  const [password, setPassword] = useState('');
  const [code, setCode] = useState('');
  const act = useAction();
  const [provider, setProvider] = useState<string | null>(null);
  useTitle('Sign in');
  useEffect(() => {
    api.setupStatus().then(
      (s) => setProvider(s.oidc ? (s.oidc_name ?? 'single sign-on') : null),
      () => setProvider(null),
    );
  }, []);
  return (
    <main class="narrow">
      <h1>Sign in</h1>
      {provider && stage === 'password' ? (
        <div class="card stack">
          <a
            class="button primary"
            href={api.oidcStartUrl({
              returnTo: location.pathname === '/login' ? '/' : location.pathname + location.search,
            })}
          >
            Sign in with {provider}
          </a>
          <p class="muted">Or with a username and password:</p>
        </div>
      ) : null}
      {stage === 'password' ? (
        <form
          class="card stack"
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              const r = await api.login(username.trim(), password);
              if (r.totp_required) setStage('totp');
              else if (r.user) onDone(r.user);
            });
          }}
        >
          <label>
            Username
            <input
              name="username"
              autoComplete="username"
              required
              value={username}
              onInput={(e) => setUsername((e.target as HTMLInputElement).value)}
            />
          </label>
          <label>
            Password
            <input
              name="password"
              type="password"
              autoComplete="current-password"
              required
              value={password}
              onInput={(e) => setPassword((e.target as HTMLInputElement).value)}
            />
          </label>
          <ErrorNote error={act.error} />
          <button type="submit" class="primary" disabled={act.busy}>
            Sign in
          </button>
        </form>
      ) : (
        <form
          class="card stack"
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              const r = await api.loginTotp(code.trim());
              noteTotpSignIn();
              onDone(r.user);
            });
          }}
        >
          <label>
            Authentication code (or a recovery code)
            <input
              name="code"
              autoComplete="one-time-code"
              autoCapitalize="off"
              spellcheck={false}
              required
              autoFocus
              value={code}
              onInput={(e) => setCode((e.target as HTMLInputElement).value)}
            />
          </label>
          <ErrorNote error={act.error} />
          <button type="submit" class="primary" disabled={act.busy}>
            Verify
          </button>
        </form>
      )}
    </main>
  );
}
