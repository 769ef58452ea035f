// The step-up dialog: the API answered `step_up_required`; ask for a TOTP code (or the password
// when the operator has no TOTP), verify it, and let api.ts retry the original call once.
import { useEffect, useRef, useState } from 'preact/hooks';
import { setStepUpHandler, stepUp } from './api';
import { ErrorNote } from './ui';

interface Pending {
  resolve: (ok: boolean) => void;
}

export function StepUpDialog({ totp }: { totp: boolean }) {
  const [pending, setPending] = useState<Pending | null>(null);
  const [value, setValue] = useState('');
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const ref = useRef<HTMLDialogElement>(null);

  useEffect(() => {
    setStepUpHandler(() => new Promise<boolean>((resolve) => setPending({ resolve })));
    return () => setStepUpHandler(null);
  }, []);
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
        <p>This action needs a recent verification.</p>
        <label>
          {totp ? 'Authentication code (or a recovery code)' : 'Password'}
          <input
            name="stepup"
            type={totp ? 'text' : 'password'}
            inputMode={totp ? 'numeric' : undefined}
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
      </form>
    </dialog>
  );
}
