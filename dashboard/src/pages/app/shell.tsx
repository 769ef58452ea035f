// A shell in a running service's container, when the instance enables it. The WebSocket needs
// a recent step-up that a browser's upgrade cannot ask for, so a refused connection asks for the
// step-up once and tries again. xterm arrives with ./terminal, imported on connect only.
import { useState } from 'preact/hooks';
import * as api from '../../api';
import { ErrorNote, useLoad } from '../../ui';

type TerminalModule = typeof import('./terminal');

export function ShellTab({ id }: { id: string }) {
  const info = useLoad(() => api.instanceInfo(), []);
  const services = useLoad(() => api.listServices(id).then((r) => r.items), [id]);
  const [service, setService] = useState('');
  const [mod, setMod] = useState<TerminalModule | null>(null);
  const [session, setSession] = useState<{ url: string; attempt: number } | null>(null);
  const [error, setError] = useState<unknown>(null);
  const running = services.data?.filter((s) => s.status === 'running') ?? [];
  const chosen = service || running[0]?.name || '';

  if (info.data && !info.data.features?.shell) {
    return (
      <section class="card" aria-labelledby="shell-h">
        <h2 id="shell-h">Shell</h2>
        <p class="muted" data-testid="shell-disabled">
          The container shell is turned off on this instance (SVC_ENABLE_SHELL=true turns it on).
        </p>
      </section>
    );
  }
  const connect = async (attempt: number) => {
    setError(null);
    try {
      const m = mod ?? (await import('./terminal'));
      setMod(m);
      setSession({ url: api.shellUrl(id, chosen), attempt });
    } catch (e) {
      setError(e);
    }
  };
  return (
    <section class="card" aria-labelledby="shell-h">
      <h2 id="shell-h">Shell</h2>
      <ErrorNote error={info.error ?? services.error ?? error} />
      <div class="row wrap">
        <label>
          Service
          <select value={chosen} onChange={(e) => setService((e.target as HTMLSelectElement).value)}>
            {running.map((s) => (
              <option key={s.name} value={s.name}>
                {s.name}
              </option>
            ))}
          </select>
        </label>
        {!session && (
          <button type="button" class="primary" disabled={!chosen} onClick={() => void connect(0)}>
            Connect
          </button>
        )}
        {session && (
          <button type="button" onClick={() => setSession(null)}>
            Disconnect
          </button>
        )}
      </div>
      {running.length === 0 && services.data && <p class="muted">No service is running.</p>}
      {session && mod && (
        <mod.TerminalView
          key={`${session.url}#${session.attempt}`}
          url={session.url}
          onClosed={async (opened) => {
            if (opened) return;
            // Refused before the upgrade: most often the step-up; ask once, then try again.
            if (session.attempt === 0 && (await api.confirmIdentity())) return void connect(1);
            setSession(null);
            setError(
              new Error('The shell could not be opened: the service must be running and the step-up recent.'),
            );
          }}
        />
      )}
    </section>
  );
}
