// The posture checklist with the fix for every item that is not ok.
import * as api from '../api';
import { Badge, ErrorNote, useLoad } from '../ui';

export function SecurityPage() {
  const posture = useLoad(() => api.posture().then((r) => r.items));
  return (
    <main>
      <h1>Security</h1>
      <section class="card" aria-labelledby="posture-list-h">
        <h2 id="posture-list-h">Posture</h2>
        <ErrorNote error={posture.error} />
        <ul class="plain checklist">
          {(posture.data ?? []).map((p, i) => (
            <li key={`${p.code}-${i}`} data-testid="posture-item">
              <div class="row"><Badge status={p.status} /> <strong>{p.title}</strong>{p.app && <span class="muted"> {p.app}{p.service ? `/${p.service}` : ''}</span>}</div>
              <p>{p.reason}</p>
              {p.status !== 'ok' && p.fix && <p class="fix">{p.fix}</p>}
            </li>
          ))}
        </ul>
      </section>
    </main>
  );
}
