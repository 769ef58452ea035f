// A domain's status is derived, never stored: from its assignment, what the DNS check saw and
// what certificate Caddy serves for the name. Pure, so every rule has a unit test.
import type { HostCheckRow, DomainRow, CertificateRow } from './store.js';

export const DOMAIN_STATUSES = ['unassigned', 'awaiting_dns', 'issuing', 'active', 'error'] as const;
export type DomainStatus = (typeof DOMAIN_STATUSES)[number];
export const CERTIFICATE_SOURCES = ['acme', 'uploaded'] as const;

/** Without a certificate this long after the host was handed to the CA, the status is `error`. */
export const ISSUE_TIMEOUT_MS = 10 * 60_000;
/** `certificate_expiring` is published this long before a served certificate expires. */
export const EXPIRY_WARNING_MS = 14 * 86_400_000;

export interface StatusInput {
  /** Serves a service (or the control plane) or redirects. */
  assigned: boolean;
  uploaded: Pick<CertificateRow, 'issuer' | 'not_after' | 'fingerprint256'> | null;
  check: HostCheckRow | null;
  now: number;
  issueTimeoutMs?: number;
}

export interface StatusResult {
  status: DomainStatus;
  detail: string;
}

const day = (iso: string) => iso.slice(0, 10);

function dnsDetail(check: HostCheckRow): string {
  if (check.dns_error) return `DNS: ${check.dns_error}. Point an A (or AAAA) record at this host.`;
  const resolved = parseList(check.dns_resolved);
  const expected = parseList(check.dns_expected);
  if (expected.length === 0) return 'This host has no public address to compare with; set SVC_PUBLIC_IP.';
  const elsewhere = resolved.filter((ip) => !expected.includes(ip));
  return `The name resolves to ${elsewhere.join(', ') || resolved.join(', ')}, not to this host (${expected.join(', ')}). Update its DNS records.`;
}

export function parseList(json: string | null): string[] {
  if (!json) return [];
  try {
    const v = JSON.parse(json) as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

export function computeStatus(input: StatusInput): StatusResult {
  const { check, now, uploaded } = input;
  if (!input.assigned)
    return { status: 'unassigned', detail: 'Not assigned: give it an app service or a redirect.' };
  if (!check || !check.dns_checked_at)
    return { status: 'awaiting_dns', detail: 'DNS has not been checked yet.' };
  if (check.dns_points_here !== 1) return { status: 'awaiting_dns', detail: dnsDetail(check) };
  if (uploaded) {
    if (now >= Date.parse(uploaded.not_after))
      return {
        status: 'error',
        detail: `The uploaded certificate expired on ${day(uploaded.not_after)}; upload a new one or delete it to return to ACME.`,
      };
    if (check.cert_fingerprint256 === uploaded.fingerprint256)
      return {
        status: 'active',
        detail: `Serving the uploaded certificate (valid until ${day(uploaded.not_after)}).`,
      };
    return { status: 'issuing', detail: 'Waiting for the proxy to serve the uploaded certificate.' };
  }
  if (check.cert_fingerprint256 && check.cert_not_after) {
    if (now >= Date.parse(check.cert_not_after))
      return {
        status: 'error',
        detail: `The certificate expired on ${day(check.cert_not_after)} and was not renewed; check that port 80 reaches this host.`,
      };
    return {
      status: 'active',
      detail: `Certificate from ${check.cert_issuer ?? 'the CA'}, valid until ${day(check.cert_not_after)}.`,
    };
  }
  const since = check.issuing_since ? Date.parse(check.issuing_since) : now;
  const timeout = input.issueTimeoutMs ?? ISSUE_TIMEOUT_MS;
  if (now - since >= timeout) {
    return {
      status: 'error',
      detail: `No certificate after ${Math.round((now - since) / 60_000)} minutes. Check that port 80 of this host is reachable from the internet for the name; Caddy's log names the CA's reason.`,
    };
  }
  return { status: 'issuing', detail: 'Requesting a certificate from the CA.' };
}

export interface CertificateView {
  source: (typeof CERTIFICATE_SOURCES)[number];
  issuer: string;
  not_after: string;
}

export interface DnsView {
  addresses: string[];
  points_here: boolean;
  checked_at: string;
}

export function certificateView(
  uploaded: StatusInput['uploaded'],
  check: HostCheckRow | null,
): CertificateView | null {
  if (uploaded) return { source: 'uploaded', issuer: uploaded.issuer, not_after: uploaded.not_after };
  if (check?.cert_fingerprint256 && check.cert_issuer && check.cert_not_after)
    return { source: 'acme', issuer: check.cert_issuer, not_after: check.cert_not_after };
  return null;
}

export function dnsView(check: HostCheckRow | null): DnsView | null {
  if (!check?.dns_checked_at) return null;
  return {
    addresses: parseList(check.dns_resolved),
    points_here: check.dns_points_here === 1,
    checked_at: check.dns_checked_at,
  };
}

export interface DomainView {
  id: string;
  hostname: string;
  app_id: string | null;
  service: string | null;
  port: number | null;
  redirect_to: string | null;
  status: DomainStatus;
  status_detail: string;
  certificate: CertificateView | null;
  dns: DnsView | null;
  created_at: string;
  updated_at: string;
}

/** The contract's Domain. */
export function domainView(
  row: DomainRow,
  uploaded: CertificateRow | null,
  check: HostCheckRow | null,
  now: number,
): DomainView {
  const assigned = row.redirect_to !== null || row.app_id !== null;
  const s = computeStatus({ assigned, uploaded, check, now });
  return {
    id: row.id,
    hostname: row.hostname,
    app_id: row.app_id,
    service: row.app_id === null ? null : row.service,
    port: row.port,
    redirect_to: row.redirect_to,
    status: s.status,
    status_detail: s.detail,
    certificate: certificateView(uploaded, check),
    dns: dnsView(check),
    created_at: row.created_at,
    updated_at: row.updated_at,
  };
}

export interface AutomaticHostView {
  managed: true;
  hostname: string;
  app_id: string;
  service: string;
  port: number;
  redirect_to: null;
  status: DomainStatus;
  status_detail: string;
  certificate: CertificateView | null;
  dns: DnsView | null;
}

/** An automatic host as listings show it: `managed: true`, no id. */
export function automaticHostView(
  a: { appId: string; service: string; hostname: string; port: number },
  check: HostCheckRow | null,
  now: number,
): AutomaticHostView {
  const s = computeStatus({ assigned: true, uploaded: null, check, now });
  return {
    managed: true,
    hostname: a.hostname,
    app_id: a.appId,
    service: a.service,
    port: a.port,
    redirect_to: null,
    status: s.status,
    status_detail: s.detail,
    certificate: certificateView(null, check),
    dns: dnsView(check),
  };
}
