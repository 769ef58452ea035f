// Does a name resolve to this host? The answer decides whether a domain is handed to the CA, so
// it is asked of the resolver the operator chose (SVC_DNS_RESOLVER) and compared with the
// addresses the operator declared (SVC_PUBLIC_IP), else with the ones this host's interfaces hold.
import { Resolver } from 'node:dns/promises';
import { isIP } from 'node:net';
import { networkInterfaces } from 'node:os';
import { badRequest } from '../http/errors.js';
import { checkHostname } from '../util/hostname.js';

export interface DnsCheck {
  host: string;
  expected: string[];
  resolved: string[];
  points_here: boolean;
  error?: string;
  checked_at: string;
}

export interface DnsCheckOptions {
  /** `ip` or `ip:port`; null: the system's resolvers. */
  resolver: string | null;
  /** The host's public addresses; null: detected from the interfaces. */
  publicIps: string[] | null;
  timeoutMs?: number;
  now?: () => number;
}

export type DnsChecker = (host: string) => Promise<DnsCheck>;

function canonicalIp(ip: string): string {
  const v = ip.toLowerCase();
  if (v.startsWith('::ffff:') && isIP(v.slice(7)) === 4) return v.slice(7);
  return v;
}

/**
 * Addresses on this host's interfaces that a DNS record could point at: not loopback, not
 * link-local, not the container bridges (an app network's gateway is no public address).
 */
export function detectAddresses(): string[] {
  const out = new Set<string>();
  for (const [name, addrs] of Object.entries(networkInterfaces())) {
    if (/^(docker\d*|br-|veth|virbr|cni|flannel|kube)/.test(name)) continue;
    for (const a of addrs ?? []) {
      if (a.internal) continue;
      const ip = canonicalIp(a.address);
      if (ip.startsWith('fe80:') || ip.startsWith('169.254.')) continue;
      out.add(ip);
    }
  }
  return [...out].sort();
}

const NO_ANSWER = new Set(['ENODATA', 'ENOTFOUND', 'NXDOMAIN', 'ENONAME']);

function lookupError(code: string): string {
  switch (code) {
    case 'ETIMEOUT':
      return 'the DNS resolver did not answer in time';
    case 'ECONNREFUSED':
      return 'the DNS resolver refused the connection';
    case 'ESERVFAIL':
      return 'the DNS resolver failed to answer (SERVFAIL)';
    case 'EREFUSED':
      return 'the DNS resolver refused the query';
    default:
      return `the DNS lookup failed (${code || 'unknown error'})`;
  }
}

export function createDnsChecker(opts: DnsCheckOptions): DnsChecker {
  const now = opts.now ?? Date.now;
  let detected: string[] | null = null;
  const expected = () => opts.publicIps ?? (detected ??= detectAddresses());
  return async (input: string) => {
    const name = checkHostname(input);
    if (!name.ok)
      throw badRequest(`Invalid host: ${name.message}`, [
        { field: 'host', rule: name.rule, message: name.message },
      ]);
    const host = name.hostname;
    // A resolver per check: node:dns resolvers hold no cache, and this keeps lookups independent.
    const r = new Resolver({ timeout: opts.timeoutMs ?? 2_000, tries: 2 });
    if (opts.resolver) r.setServers([opts.resolver]);
    const codes: string[] = [];
    const ask = (fn: Promise<string[]>) =>
      fn.catch((e: NodeJS.ErrnoException) => {
        codes.push(e.code ?? '');
        return [] as string[];
      });
    const [v4, v6] = await Promise.all([ask(r.resolve4(host)), ask(r.resolve6(host))]);
    const resolved = [...new Set([...v4, ...v6].map(canonicalIp))];
    const exp = expected();
    const check: DnsCheck = {
      host,
      expected: exp,
      resolved,
      points_here: resolved.length > 0 && resolved.every((ip) => exp.includes(ip)),
      checked_at: new Date(now()).toISOString(),
    };
    const failure = codes.find((c) => !NO_ANSWER.has(c));
    if (failure !== undefined) check.error = lookupError(failure);
    else if (resolved.length === 0)
      check.error = codes.some((c) => c === 'ENOTFOUND' || c === 'NXDOMAIN')
        ? 'the name does not exist in DNS'
        : 'the name has no A or AAAA record';
    return check;
  };
}
