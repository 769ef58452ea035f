// First run: setup token -> first operator -> sign in -> TOTP enrolment (QR drawn here) -> recovery codes.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { User } from '../api';
import { QrCode } from '../qr';
import { ErrorNote, useAction } from '../ui';
import { useTitle } from '../title';

type Step =
  | { s: 'admin' }
  | { s: 'totp'; secret: string; url: string; user: User }
  | { s: 'codes'; codes: string[]; user: User };

/**
 * `svc install` prints the setup link as `<url>#token=<token>`: a fragment never reaches the server
 * (nor a proxy's access log). It is read once and removed from the address bar and history.
 */
function tokenFromLink(): string {
  const m = /^#token=([A-Za-z0-9_-]{1,200})$/.exec(location.hash);
  if (!m) return '';
  history.replaceState(history.state, '', location.pathname + location.search);
  return m[1]!;
}

export function SetupPage({ onDone }: { onDone: (u: User) => void }) {
  useTitle('Set up');
  const [step, setStep] = useState<Step>({ s: 'admin' });
  const [form, setForm] = useState(() => ({
    token: tokenFromLink(),
    username: '',
    password: '',
    confirm: '',
    code: '',
  }));
  const act = useAction();
  const field = (k: keyof typeof form) => ({
    value: form[k],
    onInput: (e: Event) => setForm({ ...form, [k]: (e.target as HTMLInputElement).value }),
  });

  if (step.s === 'admin') {
    return (
      <main class="narrow">
        <h1>Set up svc</h1>
        <p>
          Paste the setup token from <code>setup.token</code> in the data directory (also printed once in the
          server log), then create the first operator.
        </p>
        <form
          class="card stack"
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              if (form.password !== form.confirm) throw new Error('The passwords do not match');
              await api.setupAdmin(form.token.trim(), form.username.trim(), form.password);
              const r = await api.login(form.username.trim(), form.password);
              if (!r.user) throw new Error('Sign-in after setup did not open a session');
              // Enrolling a second factor needs a step-up: the password just typed is that proof.
              await api.stepUp({ password: form.password });
              const t = await api.totpSetup();
              setStep({ s: 'totp', secret: t.secret, url: t.otpauth_url, user: r.user });
            });
          }}
        >
          <label>
            Setup token
            <input name="token" autoComplete="off" required {...field('token')} />
          </label>
          <label>
            Username
            <input name="username" autoComplete="username" required {...field('username')} />
          </label>
          <label>
            Password
            <input
              name="password"
              type="password"
              autoComplete="new-password"
              required
              minLength={12}
              {...field('password')}
            />
          </label>
          <label>
            Repeat password
            <input
              name="confirm"
              type="password"
              autoComplete="new-password"
              required
              {...field('confirm')}
            />
          </label>
          <ErrorNote error={act.error} />
          <button type="submit" class="primary" disabled={act.busy}>
            Create operator
          </button>
        </form>
      </main>
    );
  }
  if (step.s === 'totp') {
    return (
      <main class="narrow">
        <h1>Two-factor authentication</h1>
        <p>
          Scan this code with an authenticator app, or type the secret, then enter the 6-digit code it shows.
        </p>
        <div class="card stack">
          <QrCode text={step.url} label="QR code of the TOTP secret" />
          <p>
            Secret:{' '}
            <code class="secret" data-testid="totp-secret">
              {step.secret}
            </code>
          </p>
          <form
            class="stack"
            onSubmit={(e) => {
              e.preventDefault();
              void act.run(async () => {
                const enable = () => api.totpEnable(form.code.trim());
                // The step-up of the first step lasts minutes; scanning the code may have taken longer.
                const r = await enable().catch(async (err: unknown) => {
                  if (!(err instanceof api.ApiError) || err.code !== 'step_up_required') throw err;
                  await api.stepUp({ password: form.password });
                  return enable();
                });
                setStep({ s: 'codes', codes: r.recovery_codes, user: { ...step.user, totp_enabled: true } });
              });
            }}
          >
            <label>
              Code
              <input
                name="code"
                inputMode="numeric"
                autoComplete="one-time-code"
                required
                {...field('code')}
              />
            </label>
            <ErrorNote error={act.error} />
            <div class="row">
              <button type="submit" class="primary" disabled={act.busy}>
                Enable
              </button>
              <button type="button" onClick={() => onDone(step.user)}>
                Skip for now
              </button>
            </div>
          </form>
        </div>
      </main>
    );
  }
  const blob = URL.createObjectURL(new Blob([step.codes.join('\n') + '\n'], { type: 'text/plain' }));
  return (
    <main class="narrow">
      <h1>Recovery codes</h1>
      <p>
        Each code signs you in once if you lose your authenticator. They are shown only now: save them
        somewhere safe.
      </p>
      <div class="card stack">
        <ul class="codes" data-testid="recovery-codes">
          {step.codes.map((c) => (
            <li key={c}>
              <code>{c}</code>
            </li>
          ))}
        </ul>
        <div class="row">
          <a class="button" href={blob} download="svc-recovery-codes.txt">
            Download
          </a>
          <button type="button" onClick={() => void navigator.clipboard?.writeText(step.codes.join('\n'))}>
            Copy
          </button>
          <button type="button" class="primary" onClick={() => onDone(step.user)}>
            I saved them, continue
          </button>
        </div>
      </div>
    </main>
  );
}
