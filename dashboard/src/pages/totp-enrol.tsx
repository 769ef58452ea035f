// Two-factor enrolment right after an account is made (an accepted invitation): the password just
// typed is the step-up, the QR code is drawn here, then the recovery codes are shown once.
import { useEffect, useState } from 'preact/hooks';
import * as api from '../api';
import { QrCode } from '../qr';
import { ErrorNote, useAction } from '../ui';

export function TotpEnrol({ password, onDone }: { password: string; onDone: () => void }) {
  const [secret, setSecret] = useState<{ secret: string; url: string } | null>(null);
  const [codes, setCodes] = useState<string[] | null>(null);
  const [code, setCode] = useState('');
  const act = useAction();
  useEffect(() => {
    void act.run(async () => {
      await api.stepUp({ password });
      const t = await api.totpSetup();
      setSecret({ secret: t.secret, url: t.otpauth_url });
    });
  }, []);
  if (codes) return <RecoveryCodes codes={codes} onDone={onDone} />;
  return (
    <div class="card stack" data-testid="invite-totp">
      <h2>Two-factor authentication</h2>
      <p>
        Recommended: scan this code with an authenticator app (or type the secret), then enter the 6-digit
        code it shows. Sign-ins and risky actions then ask for a code.
      </p>
      {secret && <QrCode text={secret.url} label="QR code of the TOTP secret" />}
      {secret && (
        <p>
          Secret: <code class="secret">{secret.secret}</code>
        </p>
      )}
      <form
        class="stack"
        onSubmit={(e) => {
          e.preventDefault();
          void act.run(async () => {
            const enable = () => api.totpEnable(code.trim());
            const r = await enable().catch(async (err: unknown) => {
              if (!(err instanceof api.ApiError) || err.code !== 'step_up_required') throw err;
              await api.stepUp({ password });
              return enable();
            });
            setCodes(r.recovery_codes);
          });
        }}
      >
        <label>
          Code
          <input
            name="totp-code"
            autoComplete="one-time-code"
            required
            value={code}
            onInput={(e) => setCode((e.target as HTMLInputElement).value)}
          />
        </label>
        <ErrorNote error={act.error} />
        <div class="row">
          <button type="submit" class="primary" disabled={act.busy || !secret}>
            Enable
          </button>
          <button type="button" onClick={onDone}>
            Skip for now
          </button>
        </div>
      </form>
    </div>
  );
}

function RecoveryCodes({ codes, onDone }: { codes: string[]; onDone: () => void }) {
  return (
    <div class="card stack" data-testid="invite-recovery">
      <h2>Recovery codes</h2>
      <p>Each signs you in once if you lose your authenticator. Shown only now: save them.</p>
      <ul class="codes" data-testid="recovery-codes">
        {codes.map((c) => (
          <li key={c}>
            <code>{c}</code>
          </li>
        ))}
      </ul>
      <div class="row">
        <button type="button" onClick={() => void navigator.clipboard?.writeText(codes.join('\n'))}>
          Copy
        </button>
        <button type="button" class="primary" onClick={onDone}>
          I saved them, continue
        </button>
      </div>
    </div>
  );
}
