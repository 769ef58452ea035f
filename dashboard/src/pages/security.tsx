// Security: the posture checklist with the fix for every item that is not ok, the traffic monitor
// (refreshed every few seconds while open, and at once on an anomaly event), the host firewall's
// rules and fail2ban's jails from the host agent's snapshot.
import { useEffect } from 'preact/hooks';
import * as api from '../api';
import { useTopic } from '../ws';
import { Badge, ErrorNote, When, useLoad } from '../ui';
import { useTitle } from '../title';

const TRAFFIC_REFRESH_MS = 3_000;

export function SecurityPage() {
  useTitle('Security');
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
              <div class="row">
                <Badge status={p.status} /> <strong>{p.title}</strong>
                {p.app && (
                  <span class="muted">
                    {' '}
                    {p.app}
                    {p.service ? `/${p.service}` : ''}
                  </span>
                )}
              </div>
              <p>
                <Prose text={p.reason} />
              </p>
              {p.status !== 'ok' && p.fix && (
                <p class="fix">
                  <Prose text={p.fix} />
                </p>
              )}
            </li>
          ))}
        </ul>
      </section>
      <Traffic />
      <div class="grid">
        <Firewall />
        <Fail2ban />
      </div>
    </main>
  );
}

/** Text whose `backticked` parts are code: shown as code, never with the backticks. */
export function Prose({ text }: { text: string }) {
  const parts = text.split('`');
  // An odd count of backticks leaves the last one as text.
  if (parts.length % 2 === 0) return <>{text}</>;
  return <>{parts.map((p, i) => (i % 2 ? <code key={i}>{p}</code> : p))}</>;
}

function Traffic() {
  const t = useLoad(() => api.traffic());
  useEffect(() => {
    const timer = setInterval(() => void t.reload(), TRAFFIC_REFRESH_MS);
    return () => clearInterval(timer);
  }, [t.reload]);
  useTopic('security', () => void t.reload());
  const d = t.data;
  return (
    <section class="card" aria-labelledby="traffic-h" data-testid="traffic">
      <h2 id="traffic-h">Traffic monitor</h2>
      <ErrorNote error={t.error} />
      {d && !d.enabled && <p class="muted">The traffic monitor is off (it reads the proxy's access log).</p>}
      {d && d.enabled && (
        <>
          <p class="small muted">
            Window {d.window_seconds} s; alerts above {d.request_threshold} requests or {d.error_threshold}{' '}
            errors per IP; {d.tracked_ips} IPs tracked.
          </p>
          <div class="grid">
            <div>
              <h3>Top talkers</h3>
              {d.top_talkers.length === 0 ? (
                <p class="muted">No requests in the window.</p>
              ) : (
                <table class="stack-sm">
                  <thead>
                    <tr>
                      <th>IP</th>
                      <th>Requests</th>
                      <th>Errors</th>
                      <th>Last seen</th>
                    </tr>
                  </thead>
                  <tbody>
                    {d.top_talkers.map((x) => (
                      <tr key={x.ip}>
                        <td class="mono">{x.ip}</td>
                        <td>{x.requests}</td>
                        <td>{x.errors}</td>
                        <td>
                          <When at={x.last_seen} />
                        </td>
                      </tr>
                    ))}
                  </tbody>
                </table>
              )}
            </div>
            <div>
              <h3>Anomalies</h3>
              {d.recent_anomalies.length === 0 ? (
                <p class="muted">None recently.</p>
              ) : (
                <ul class="plain">
                  {d.recent_anomalies.map((a, i) => (
                    <li key={`${a.at}-${i}`}>
                      <Badge status="warning" /> <span class="mono">{a.ip}</span> {a.kind.replace(/_/g, ' ')}{' '}
                      ({a.count}) <When at={a.at} />
                      <div class="small muted">{a.detail}</div>
                    </li>
                  ))}
                </ul>
              )}
            </div>
          </div>
          <h3>Recent requests</h3>
          {d.recent_requests.length === 0 ? (
            <p class="muted">None yet.</p>
          ) : (
            <table class="stack-sm">
              <thead>
                <tr>
                  <th>When</th>
                  <th>IP</th>
                  <th>Request</th>
                  <th>Status</th>
                </tr>
              </thead>
              <tbody>
                {d.recent_requests.slice(0, 50).map((r, i) => (
                  <tr key={`${r.at}-${i}`}>
                    <td>
                      <When at={r.at} />
                    </td>
                    <td class="mono">{r.ip}</td>
                    <td class="mono ellipsis">
                      {r.method} {r.host}
                      {r.path}
                    </td>
                    <td>{r.status}</td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </>
      )}
    </section>
  );
}

function Unavailable({ r }: { r: { available: false; reason?: string } | { available: boolean } }) {
  return (
    <p class="muted">
      Not available
      {'reason' in r && r.reason ? (
        <>
          : <Prose text={r.reason} />
        </>
      ) : (
        ''
      )}
      .
    </p>
  );
}

function Firewall() {
  const f = useLoad(() => api.firewall());
  const d = f.data;
  return (
    <section class="card" aria-labelledby="fw-h" data-testid="firewall">
      <h2 id="fw-h">Firewall</h2>
      <ErrorNote error={f.error} />
      {d &&
        (d.available === true ? (
          <>
            <p>
              {d.backend ?? 'unknown backend'}, {d.active ? 'active' : 'inactive'}
              {d.stale && <span class="error"> (snapshot is stale)</span>} · <When at={d.generated_at} />
            </p>
            {d.rules.length === 0 ? (
              <p class="muted">No rules.</p>
            ) : (
              <pre class="mono rules">{d.rules.join('\n')}</pre>
            )}
          </>
        ) : (
          <Unavailable r={d} />
        ))}
    </section>
  );
}

function Fail2ban() {
  const f = useLoad(() => api.fail2ban());
  const d = f.data;
  return (
    <section class="card" aria-labelledby="f2b-h" data-testid="fail2ban">
      <h2 id="f2b-h">fail2ban</h2>
      <ErrorNote error={f.error} />
      {d &&
        (d.available === true ? (
          <>
            <p class="small muted">
              {d.stale && <span class="error">Snapshot is stale. </span>}
              <When at={d.generated_at} />
            </p>
            {d.jails.length === 0 ? (
              <p class="muted">No jails.</p>
            ) : (
              <table class="stack-sm">
                <thead>
                  <tr>
                    <th>Jail</th>
                    <th>Banned now</th>
                    <th>Total</th>
                    <th>IPs</th>
                  </tr>
                </thead>
                <tbody>
                  {d.jails.map((j) => (
                    <tr key={j.name}>
                      <td>{j.name}</td>
                      <td>{j.currently_banned}</td>
                      <td>{j.total_banned}</td>
                      <td class="mono small">{j.banned_ips.join(', ') || '—'}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
          </>
        ) : (
          <Unavailable r={d} />
        ))}
    </section>
  );
}
