// Domains hub: every domain and automatic host, its certificate and DNS state, a re-check, and a
// DNS check for any name before it is added.
import { useState } from 'preact/hooks';
import * as api from '../api';
import type { DnsCheck } from '../api';
import { Link } from '../router';
import { Badge, ErrorNote, When, useAction, useLoad } from '../ui';
import { useCan } from '../access';
import { useTitle } from '../title';

const DAY = 86_400_000;

/** Days until the certificate expires, or null without one. */
export function certDaysLeft(d: { certificate: { not_after: string } | null }): number | null {
  if (!d.certificate) return null;
  return Math.floor((Date.parse(d.certificate.not_after) - Date.now()) / DAY);
}

export function DomainsPage() {
  useTitle('Domains');
  const domains = useLoad(() => api.listDomains().then((r) => r.items));
  // The apps' names: a domain is shown with the app it serves, not its id.
  const names = useLoad(() => api.allApps().then((all) => new Map(all.map((a) => [a.id, a.name]))));
  const act = useAction();
  const can = useCan();
  return (
    <main>
      <h1>Domains</h1>
      <section class="card" aria-labelledby="domains-h">
        <h2 id="domains-h">All domains</h2>
        <ErrorNote error={domains.error} />
        <ErrorNote error={act.error} />
        {domains.data?.length === 0 && (
          <p class="muted">
            No domains yet. Add one on an app's page, or set a base domain on the instance page for automatic
            hosts.
          </p>
        )}
        {domains.data && domains.data.length > 0 && (
          <table class="stack-sm">
            <thead>
              <tr>
                <th>Hostname</th>
                <th>Serves</th>
                <th>Status</th>
                <th>Certificate</th>
                <th>DNS</th>
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              </tr>
            </thead>
            <tbody>
              {domains.data.map((d) => {
                const left = certDaysLeft(d);
                const id = 'id' in d ? (d as api.Domain).id : null;
                return (
                  <tr key={id ?? d.hostname} data-testid="domain-row">
                    <td class="mono">
                      {d.hostname}
                      {'managed' in d && d.managed && <span class="muted"> (automatic)</span>}
                    </td>
                    <td>
                      {d.app_id ? (
                        <>
                          <Link href={`/apps/${encodeURIComponent(d.app_id)}`}>
                            {names.data?.get(d.app_id) ?? 'an app'}
                          </Link>
                          {d.service && <span class="muted small"> {d.service}</span>}
                        </>
                      ) : 'redirect_to' in d && d.redirect_to ? (
                        `redirect to ${d.redirect_to}`
                      ) : (
                        <span class="muted">unassigned</span>
                      )}
                    </td>
                    <td>
                      <Badge status={d.status} />
                      {d.status_detail && <div class="muted small">{d.status_detail}</div>}
                    </td>
                    <td>
                      {d.certificate ? (
                        <>
                          {d.certificate.source} · {d.certificate.issuer}
                          <div class={left !== null && left < 14 ? 'error small' : 'muted small'}>
                            expires <When at={d.certificate.not_after} />
                            {left !== null && ` (${left} days)`}
                          </div>
                        </>
                      ) : (
                        <span class="muted">none</span>
                      )}
                    </td>
                    <td>
                      {d.dns ? (
                        <>
                          {d.dns.points_here ? <Badge status="ok" /> : <Badge status="warning" />}{' '}
                          <span class="mono small">{d.dns.addresses.join(', ') || 'no address'}</span>
                        </>
                      ) : (
                        <span class="muted">not checked</span>
                      )}
                    </td>
                    <td>
                      {id && can('app.admin', d.app_id ?? undefined) && (
                        <button
                          type="button"
                          disabled={act.busy}
                          onClick={() =>
                            act.run(async () => {
                              await api.refreshDomain(id);
                              await domains.reload();
                            })
                          }
                        >
                          Re-check <span class="sr-only">{d.hostname}</span>
                        </button>
                      )}
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        )}
      </section>
      <DnsCheckForm />
    </main>
  );
}

export function DnsCheckForm({ initial = '', title = 'DNS check' }: { initial?: string; title?: string }) {
  const [host, setHost] = useState(initial);
  const [result, setResult] = useState<DnsCheck | null>(null);
  const act = useAction();
  const hid = `dns-h-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <section class="card" aria-labelledby={hid}>
      <h2 id={hid}>{title}</h2>
      <form
        class="row wrap"
        onSubmit={(e) => {
          e.preventDefault();
          setResult(null);
          void act.run(async () => setResult(await api.dnsCheck(host.trim())));
        }}
      >
        <label>
          Hostname
          <input
            name="dns-host"
            required
            value={host}
            onInput={(e) => setHost((e.target as HTMLInputElement).value)}
          />
        </label>
        <button type="submit" disabled={act.busy}>
          Check DNS
        </button>
      </form>
      <ErrorNote error={act.error} />
      {result && <DnsResult r={result} />}
    </section>
  );
}

export function DnsResult({ r }: { r: DnsCheck }) {
  return (
    <div class={r.points_here ? 'notice' : 'notice notice-warn'} data-testid="dns-result" role="status">
      <p>
        <strong>{r.host}</strong>{' '}
        {r.points_here ? 'points at this host.' : 'does not point at this host yet.'}
      </p>
      <p class="small">
        Expected: <span class="mono">{r.expected.join(', ') || '—'}</span>; resolved:{' '}
        <span class="mono">{r.resolved.join(', ') || 'nothing'}</span>
      </p>
      {r.error && <p class="error small">{r.error}</p>}
    </div>
  );
}
