// Watches every routed host: does its DNS point here, which certificate does Caddy serve for it.
// What it sees is saved per host (host_checks) and drives the proxy config (a host goes to the
// CA only once its DNS points here; HTTP redirects once a certificate is served), the domain
// statuses, and the certificate events. Checks are spaced by state and run a few at a time.
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import type { Bus } from '../events/bus.js';
import type { Logger } from '../log.js';
import { Semaphore } from '../util/semaphore.js';
import type { DnsChecker } from './dns.js';
import type { CertificateProber } from './certificate.js';
import {
  getHostCheck,
  saveHostCheck,
  pruneHostChecks,
  type CertificateRow,
  type HostCheckRow,
} from './store.js';
import { computeStatus, EXPIRY_WARNING_MS, type DomainStatus } from './status.js';

/** Topic of `certificate_error` and `certificate_expiring` (the notification sender listens there). */
export const CERTIFICATE_TOPIC = 'certificates';

export interface CheckTarget {
  hostname: string;
  domainId: string | null;
  appId: string | null;
  service: string | null;
  /** From the current plan: 'none' while the host awaits DNS. */
  tls: 'acme' | 'uploaded' | 'none';
  uploaded: Pick<CertificateRow, 'issuer' | 'not_after' | 'fingerprint256'> | null;
}

export interface CheckerOptions {
  db: Db;
  bus: Bus;
  log: Logger;
  now: () => number;
  dns: DnsChecker;
  probe: CertificateProber;
  /** Every host the proxy routes (domains, automatic hosts, the control domain). */
  targets: () => Promise<CheckTarget[]>;
  /** A host's DNS or certificate state changed in a way the proxy config depends on. */
  onChange: (hostname: string) => void;
  tickMs?: number;
  concurrency?: number;
  issueTimeoutMs?: number;
}

export interface CertificateEvent {
  type: 'certificate_error' | 'certificate_expiring';
  hostname: string;
  domain_id: string | null;
  app_id: string | null;
  service: string | null;
  detail: string;
  not_after: string | null;
  at: string;
}

// How long an observation stays fresh, by the host's status.
const DNS_FRESH: Record<DomainStatus, number> = {
  unassigned: Infinity,
  awaiting_dns: 60_000,
  issuing: 600_000,
  active: 3_600_000,
  error: 120_000,
};
const CERT_FRESH: Record<DomainStatus, number> = {
  unassigned: Infinity,
  awaiting_dns: Infinity,
  issuing: 10_000,
  active: 3_600_000,
  error: 120_000,
};

function emptyRow(hostname: string, at: string): HostCheckRow {
  return {
    hostname,
    dns_resolved: null,
    dns_expected: null,
    dns_points_here: null,
    dns_error: null,
    dns_checked_at: null,
    cert_issuer: null,
    cert_not_after: null,
    cert_fingerprint256: null,
    cert_error: null,
    cert_checked_at: null,
    issuing_since: null,
    notified: null,
    updated_at: at,
  };
}

const certReady = (r: HostCheckRow | null, now: number) =>
  !!r?.cert_fingerprint256 && !!r.cert_not_after && Date.parse(r.cert_not_after) > now;

function age(iso: string | null, now: number): number {
  return iso ? now - Date.parse(iso) : Infinity;
}

export class DomainChecker {
  private readonly opts: CheckerOptions;
  private readonly sem: Semaphore;
  private readonly inFlight = new Map<string, Promise<HostCheckRow>>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;
  private stopped = false;

  constructor(opts: CheckerOptions) {
    this.opts = opts;
    this.sem = new Semaphore(opts.concurrency ?? 4);
  }

  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => void this.tick(), this.opts.tickMs ?? 5_000);
    this.timer.unref();
    void this.tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking?.catch(() => {});
    await Promise.allSettled([...this.inFlight.values()]);
  }

  /** Checks every host whose last observation is stale; removes observations of hosts no longer routed. */
  tick(): Promise<void> {
    if (this.ticking || this.stopped) return this.ticking ?? Promise.resolve();
    this.ticking = (async () => {
      try {
        const targets = await this.opts.targets();
        const now = this.opts.now();
        const jobs: Promise<unknown>[] = [];
        for (const t of targets) {
          const row = await getHostCheck(this.opts.db, t.hostname);
          const status = this.status(t, row, now);
          const dnsDue = age(row?.dns_checked_at ?? null, now) >= DNS_FRESH[status];
          const certDue = t.tls !== 'none' && age(row?.cert_checked_at ?? null, now) >= CERT_FRESH[status];
          if (dnsDue || certDue)
            jobs.push(
              this.check(t, { dns: dnsDue, cert: true }).catch((err) =>
                this.opts.log.warn({ err: String(err), host: t.hostname }, 'host check failed'),
              ),
            );
        }
        await Promise.all(jobs);
        await pruneHostChecks(this.opts.db, new Set(targets.map((t) => t.hostname)));
      } catch (err) {
        this.opts.log.warn({ err: String(err) }, 'domain checker pass failed');
      }
    })().finally(() => {
      this.ticking = null;
    });
    return this.ticking;
  }

  /** Checks one host now (DNS and certificate), as `refresh` asks. */
  async refresh(hostname: string): Promise<HostCheckRow> {
    const targets = await this.opts.targets();
    const t = targets.find((x) => x.hostname === hostname) ?? {
      hostname,
      domainId: null,
      appId: null,
      service: null,
      tls: 'none' as const,
      uploaded: null,
    };
    return this.check(t, { dns: true, cert: true });
  }

  private status(t: CheckTarget, row: HostCheckRow | null, now: number): DomainStatus {
    return computeStatus({
      assigned: true,
      uploaded: t.uploaded,
      check: row,
      now,
      issueTimeoutMs: this.opts.issueTimeoutMs,
    }).status;
  }

  /** One check per host at a time: a second caller shares the running one. */
  check(t: CheckTarget, what: { dns: boolean; cert: boolean }): Promise<HostCheckRow> {
    const running = this.inFlight.get(t.hostname);
    if (running) return running;
    const p = this.sem.run(() => this.checkNow(t, what)).finally(() => this.inFlight.delete(t.hostname));
    this.inFlight.set(t.hostname, p);
    return p;
  }

  private async checkNow(t: CheckTarget, what: { dns: boolean; cert: boolean }): Promise<HostCheckRow> {
    const { db, now } = this.opts;
    const prev = await getHostCheck(db, t.hostname);
    const at = nowIso(now());
    const row: HostCheckRow = { ...(prev ?? emptyRow(t.hostname, at)), updated_at: at };
    if (what.dns || !row.dns_checked_at) {
      const d = await this.opts.dns(t.hostname);
      row.dns_resolved = JSON.stringify(d.resolved);
      row.dns_expected = JSON.stringify(d.expected);
      row.dns_points_here = d.points_here ? 1 : 0;
      row.dns_error = d.error ?? null;
      row.dns_checked_at = d.checked_at;
    }
    const pointsHere = row.dns_points_here === 1;
    // The proxy serves HTTPS for the host once it points here (ACME) or has an uploaded certificate.
    // (A host whose DNS has just started pointing here gets its HTTPS route at the next sync.)
    const served = t.tls === 'uploaded' || (t.tls === 'acme' && pointsHere);
    if (what.cert && served) {
      const p = await this.opts.probe(t.hostname);
      row.cert_issuer = p.cert?.issuer ?? null;
      row.cert_not_after = p.cert?.not_after ?? null;
      row.cert_fingerprint256 = p.cert?.fingerprint256 ?? null;
      row.cert_error = p.error ?? null;
      row.cert_checked_at = at;
    } else if (!served) {
      Object.assign(row, {
        cert_issuer: null,
        cert_not_after: null,
        cert_fingerprint256: null,
        cert_error: null,
        cert_checked_at: null,
      });
    }
    const nowMs = now();
    const ready = certReady(row, nowMs);
    if (pointsHere && !ready && t.tls !== 'uploaded') row.issuing_since ??= at;
    else row.issuing_since = null;
    this.notify(t, row, nowMs);
    await saveHostCheck(db, row);
    if ((prev?.dns_points_here === 1) !== pointsHere || certReady(prev, nowMs) !== ready)
      this.opts.onChange(t.hostname);
    return row;
  }

  /** Publishes each certificate event once per episode (an error) or per certificate (expiry). */
  private notify(t: CheckTarget, row: HostCheckRow, now: number): void {
    let seen: { error?: string; expiring?: string } = {};
    try {
      seen = row.notified ? (JSON.parse(row.notified) as typeof seen) : {};
    } catch {
      seen = {};
    }
    const s = computeStatus({
      assigned: true,
      uploaded: t.uploaded,
      check: row,
      now,
      issueTimeoutMs: this.opts.issueTimeoutMs,
    });
    const base = {
      hostname: t.hostname,
      domain_id: t.domainId,
      app_id: t.appId,
      service: t.service,
      at: nowIso(now),
    };
    if (s.status === 'error') {
      if (!seen.error) {
        seen.error = base.at;
        this.publish({
          type: 'certificate_error',
          ...base,
          detail: s.detail,
          not_after: t.uploaded?.not_after ?? row.cert_not_after,
        });
      }
    } else delete seen.error;
    const notAfter = t.uploaded?.not_after ?? row.cert_not_after;
    const fp = t.uploaded?.fingerprint256 ?? row.cert_fingerprint256;
    if (
      notAfter &&
      fp &&
      s.status === 'active' &&
      Date.parse(notAfter) - now < EXPIRY_WARNING_MS &&
      seen.expiring !== fp
    ) {
      seen.expiring = fp;
      const days = Math.max(0, Math.floor((Date.parse(notAfter) - now) / 86_400_000));
      this.publish({
        type: 'certificate_expiring',
        ...base,
        detail: `The certificate for ${t.hostname} expires in ${days} day${days === 1 ? '' : 's'} (${notAfter.slice(0, 10)}).`,
        not_after: notAfter,
      });
    }
    row.notified = Object.keys(seen).length ? JSON.stringify(seen) : null;
  }

  private publish(e: CertificateEvent): void {
    this.opts.log.warn({ type: e.type, host: e.hostname }, e.detail);
    this.opts.bus.publish(CERTIFICATE_TOPIC, e);
  }
}
