// The step-up dialog: the API answered `step_up_required`; ask for a TOTP code (or the password
// when the operator has no TOTP), verify it, and let api.ts retry the original call once.
// An operator of the identity provider has no password: they confirm with a fresh sign-in there,
// which leaves this page and comes back to it (the action is then repeated by hand).
import { useEffect, useRef, useState } from 'preact/hooks';
import { oidcStartUrl, setStepUpHandler, setupStatus, stepUp } from './api';
import { ErrorNote } from './ui';

interface Pending {
  resolve: (ok: boolean) => void;
}

/** When the operator last signed in with a TOTP code: that code cannot prove it again. */
let totpSignInAt = 0;
const TOTP_STEP_MS = 30_000;
export function noteTotpSignIn(): void {
  totpSignInAt = Date.now();
}

export function StepUpDialog({ totp, sso }: { totp: boolean; sso: boolean }) {
  const [pending, setPending] = useState<Pending | null>(null);
  const [provider, setProvider] = useState('your identity provider');
  const [value, setValue] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const ref = useRef<HTMLDialogElement>(null);

  useEffect(() => {
    setStepUpHandler(() => new Promise<boolean>((resolve) => setPending({ resolve })));
    return () => setStepUpHandler(null);
  }, []);
  useEffect(() => {
    if (!sso) return;
    setupStatus().then(
      (s) => s.oidc_name && setProvider(s.oidc_name),
      () => {},
    );
  }, [sso]);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (pending && !d.open) d.showModal();
    if (!pending && d.open) d.close();
  }, [pending]);

  const finish = (ok: boolean) => {
    pending?.resolve(ok);
    setPending(null);
    setValue('');
    setError(null);
  };

  return (
    <dialog
      ref={ref}
      class="dialog"
      aria-labelledby="stepup-title"
      onCancel={(e) => {
        e.preventDefault();
        finish(false);
      }}
    >
      <form
        method="dialog"
        onSubmit={async (e) => {
          e.preventDefault();
          setBusy(true);
          try {
            await stepUp(totp ? { code: value.trim() } : { password: value });
            finish(true);
          } catch (err) {
            setError(err);
          } finally {
            setBusy(false);
          }
        }}
      >
        <h2 id="stepup-title">Confirm it is you</h2>
        <p data-testid="stepup-why">
          What you asked for can delete data, show a secret or change who may do what, so it needs a fresh
          proof that it is you. It holds for 5 minutes; signing in does not count.
        </p>
        {totp && !sso && (
          <p class="small muted" data-testid="stepup-codes">
            Type the code your authenticator app shows now, or one of your recovery codes (the one-time codes
            saved when two-factor authentication was turned on; each works once).
            {Date.now() - totpSignInAt < 2 * TOTP_STEP_MS &&
              ' You signed in with a code moments ago: that one is used up, so wait for the next code.'}
          </p>
        )}
        {sso ? (
          <div class="stack">
            <a
              class="button primary"
              href={oidcStartUrl({ stepUp: true, returnTo: location.pathname + location.search })}
            >
              Sign in again with {provider}
            </a>
            <p class="muted">You come back to this page afterwards; then repeat the action.</p>
            {!totp ? (
              <div class="row">
                <button type="button" onClick={() => finish(false)}>
                  Cancel
                </button>
              </div>
            ) : null}
          </div>
        ) : null}
        {sso && !totp ? null : (
          <>
            <label>
              {totp ? 'Authentication code (or a recovery code)' : 'Password'}
              <input
                name="stepup"
                type={totp ? 'text' : 'password'}
                autoCapitalize={totp ? 'off' : undefined}
                spellcheck={false}
                autoComplete={totp ? 'one-time-code' : 'current-password'}
                value={value}
                onInput={(e) => setValue((e.target as HTMLInputElement).value)}
                required
                autoFocus
              />
            </label>
            <ErrorNote error={error} />
            <div class="row">
              <button type="submit" class="primary" disabled={busy}>
                Verify
              </button>
              <button type="button" onClick={() => finish(false)}>
                Cancel
              </button>
            </div>
          </>
        )}
      </form>
    </dialog>
  );
}
