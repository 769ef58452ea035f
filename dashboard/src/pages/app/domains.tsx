// Domains of this app with their status, certificate and DNS answer; add one, re-check one
// (DNS and certificate, now), delete one. Automatic hosts (from the base domain) are listed
// read-only. While one is waiting for DNS or a certificate the list refreshes itself.
import { useEffect, useState } from 'preact/hooks';
import * as api from '../../api';
import type { Domain } from '../../api';
import { Badge, ErrorNote, When, useAction, useLoad } from '../../ui';
import { useCan } from '../../access';
import { formErrors } from '../../form-errors';
import { CertificateUpload } from './certificate';

export function DomainsTab({ id }: { id: string }) {
  const domains = useLoad(() => api.appDomains(id), [id]);
  const services = useLoad(() => api.listServices(id).then((r) => r.items), [id]);
  const [hostname, setHostname] = useState('');
  const [service, setService] = useState('');
  const [port, setPort] = useState('');
  const act = useAction();
  const items = domains.data?.items ?? [];
  const pending = items.some((d) => d.status === 'issuing' || d.status === 'awaiting_dns');
  useEffect(() => {
    if (!pending) return;
    const t = setInterval(() => void domains.reload(), 5_000);
    return () => clearInterval(t);
  }, [pending, domains.reload]);
  const proxy = domains.data?.proxy;
  const chosen = service || services.data?.[0]?.name || '';
  const can = useCan();
  const admin = can('app.admin', id);
  const errors = formErrors(act.error, { hostname: 'Hostname', service: 'Service', port: 'Port' });
  return (
    <section class="card" aria-labelledby="domains-h">
      <h2 id="domains-h">Domains</h2>
      <ErrorNote error={domains.error} />
      {proxy && proxy.synced === false && (
        <p class="warning" role="status">
          The proxy is not in sync{typeof proxy.error === 'string' ? `: ${proxy.error}` : ''}. Changes are
          saved and applied once it answers.
        </p>
      )}
      {domains.data && items.length === 0 && <p class="muted">No domains yet.</p>}
      {items.length > 0 && (
        <table class="stack-sm">
          <thead>
            <tr>
              <th>Hostname</th>
              <th>Service</th>
              <th>Status</th>
              <th>Certificate</th>
              <th>DNS</th>
              {admin && (
                <th>
                  <span class="sr-only">Actions</span>
                </th>
              )}
            </tr>
          </thead>
          <tbody>
            {items.map((d) => (
              <DomainRow
                key={d.id ?? d.hostname}
                d={d}
                admin={admin}
                onCertificate={() => void domains.reload()}
                busy={act.busy}
                onRefresh={() =>
                  void act.run(async () => {
                    await api.refreshDomain(d.id!);
                    await domains.reload();
                  })
                }
                onDelete={() => {
                  if (!confirm(`Delete the domain ${d.hostname}?`)) return;
                  void act.run(async () => {
                    await api.deleteDomain(d.id!);
                    await domains.reload();
                  });
                }}
              />
            ))}
          </tbody>
        </table>
      )}
      {admin && (
        <form
          class="row wrap"
          onSubmit={(e) => {
            e.preventDefault();
            void act.run(async () => {
              await api.addAppDomain(id, {
                hostname: hostname.trim(),
                service: chosen,
                ...(port.trim() ? { port: Number(port) } : {}),
              });
              setHostname('');
              await domains.reload();
            });
          }}
        >
          <div class="field">
            <label for="domain-hostname">Hostname</label>
            <input
              id="domain-hostname"
              name="hostname"
              required
              placeholder="shop.example.com"
              value={hostname}
              aria-invalid={errors.field('hostname') ? true : undefined}
              aria-describedby={errors.field('hostname') ? 'domain-hostname-err' : undefined}
              onInput={(e) => setHostname((e.target as HTMLInputElement).value)}
            />
            {errors.field('hostname') && (
              <span id="domain-hostname-err" class="error small" data-testid="field-error">
                {errors.field('hostname')}
              </span>
            )}
          </div>
          <label>
            Service
            <select
              value={chosen}
              onChange={(e) => setService((e.target as HTMLSelectElement).value)}
              required
            >
              {services.data?.map((s) => (
                <option key={s.name} value={s.name}>
                  {s.name}
                </option>
              ))}
            </select>
          </label>
          <label>
            Port
            <input
              name="port"
              class="short"
              inputMode="numeric"
              placeholder="the service's"
              value={port}
              onInput={(e) => setPort((e.target as HTMLInputElement).value)}
            />
          </label>
          <button type="submit" disabled={act.busy || !chosen}>
            Add domain
          </button>
          {(errors.note ?? errors.field('port') ?? errors.field('service')) && (
            <p class="error small" role="alert">
              {errors.note ?? errors.field('port') ?? errors.field('service')}
            </p>
          )}
        </form>
      )}
    </section>
  );
}

function DomainRow({
  d,
  admin,
  onCertificate,
  busy,
  onRefresh,
  onDelete,
}: {
  d: Domain;
  admin: boolean;
  onCertificate: () => void;
  busy: boolean;
  onRefresh: () => void;
  onDelete: () => void;
}) {
  return (
    <tr data-testid="domain-row">
      <td class="mono">
        {d.hostname}
        {(d as Domain & { managed?: boolean }).managed && <span class="muted small"> automatic</span>}
      </td>
      <td>
        {d.service ?? '—'}
        {d.port ? <span class="muted">:{d.port}</span> : null}
      </td>
      <td>
        <Badge status={d.status} />
        {d.status_detail && <div class="muted small">{d.status_detail}</div>}
      </td>
      <td>
        {d.certificate ? (
          <>
            {d.certificate.source}
            {d.certificate.issuer ? `, ${d.certificate.issuer}` : ''}
            {d.certificate.not_after && (
              <div class="muted small">
                until <When at={d.certificate.not_after} />
              </div>
            )}
          </>
        ) : (
          <span class="muted">none yet</span>
        )}
      </td>
      <td>
        {d.dns ? (
          <>
            <span class={d.dns.points_here ? 'ok' : 'warning'}>
              {d.dns.points_here ? 'points here' : 'does not point here'}
            </span>
            <div class="muted small mono">{d.dns.addresses.join(', ') || 'no address'}</div>
          </>
        ) : (
          <span class="muted">not checked</span>
        )}
      </td>
      {admin && (
        <td class="row wrap">
          {d.id && (
            <button
              type="button"
              disabled={busy}
              aria-label={`Check DNS and certificate of ${d.hostname}`}
              onClick={onRefresh}
            >
              Check
            </button>
          )}
          {d.id && (
            <button
              type="button"
              class="danger"
              disabled={busy}
              aria-label={`Delete ${d.hostname}`}
              onClick={onDelete}
            >
              Delete
            </button>
          )}
          {d.id && <CertificateUpload domain={d} onChanged={onCertificate} />}
        </td>
      )}
    </tr>
  );
}
