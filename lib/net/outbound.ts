// The one client for outbound HTTP to an address an operator typed (notification webhooks).
// A URL is a request to reach *something*; without this guard it reaches the host's loopback,
// the cloud metadata service or the LAN. So: https only, resolve once, refuse every address
// that is not global unicast (IPv4-mapped, SIIT and NAT64 forms unwrapped first), then connect
// to exactly the address that was checked (no second lookup a rebinding resolver could answer
// differently), follow no redirect, and bound time and bytes.
import { request as httpsRequest, type Agent } from 'node:https';
import { request as httpRequest, type IncomingMessage } from 'node:http';
import { lookup as dnsLookup } from 'node:dns/promises';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';

export const OUTBOUND_TIMEOUT_MS = 5_000;
export const OUTBOUND_MAX_BYTES = 64 * 1024;

export interface ResolvedAddress {
  address: string;
  family: 4 | 6;
}

export type Resolver = (host: string) => Promise<ResolvedAddress[]>;

export interface OutboundOptions {
  /** SVC_NOTIFY_ALLOW: IPs/CIDRs exempted from the range check (self-hosted chat servers). */
  allow?: readonly string[];
  /** Resolves a name once; tests inject one to play DNS rebinding. */
  resolve?: Resolver;
  timeoutMs?: number;
  maxBytes?: number;
  /** TLS agent (tests trust their own CA through it); never changes which address is used. */
  agent?: Agent;
  /** Extra CA certificates (PEM) trusted for TLS without an agent (syslog, SMTP; tests). */
  ca?: string;
}

/** A URL or address the guard will not reach; `reason` is safe to show (no secret path). */
export class OutboundRefused extends Error {
  constructor(readonly reason: string) {
    super(reason);
  }
}

export interface OutboundResponse {
  status: number;
  /** At most maxBytes of the body, as text. */
  body: string;
  /** The server sent more than maxBytes; the rest was not read. */
  truncated: boolean;
}

const systemResolve: Resolver = async (host) => {
  const out = await dnsLookup(host, { all: true, verbatim: true });
  return out.map((a) => ({ address: a.address, family: a.family === 6 ? 6 : 4 }));
};

type Parsed = ipaddr.IPv4 | ipaddr.IPv6;

/** Parses SVC_NOTIFY_ALLOW-style entries; throws naming a bad one. */
export function parseAllow(entries: readonly string[]): Array<[Parsed, number]> {
  return entries.map((e) => {
    try {
      if (e.includes('/')) return ipaddr.parseCIDR(e);
      const a = ipaddr.parse(e);
      return [a, a.kind() === 'ipv4' ? 32 : 128] as [Parsed, number];
    } catch {
      throw new Error(`"${e}" is not an IP address or CIDR`);
    }
  });
}

function allowed(addr: Parsed, allow: Array<[Parsed, number]>): boolean {
  for (const [net, bits] of allow) {
    if (net.kind() === addr.kind() && addr.match(net as never, bits)) return true;
    // An IPv4 allow entry also covers the IPv4-mapped form a dual-stack lookup may return.
    if (net.kind() === 'ipv4' && addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()) {
      if ((addr as ipaddr.IPv6).toIPv4Address().match(net as ipaddr.IPv4, bits)) return true;
    }
  }
  return false;
}

/** The IPv4 address an IPv6 address carries in its last 32 bits, for the forms that route to it. */
function embeddedV4(a: ipaddr.IPv6, range: string): ipaddr.IPv4 | null {
  if (range === 'ipv4Mapped' || range === 'rfc6145' || range === 'rfc6052') {
    const b = a.toByteArray();
    return new ipaddr.IPv4(b.slice(12, 16));
  }
  return null;
}

/**
 * Why `address` may not be reached, or null when it is global unicast. Every special range of
 * the address library is refused (loopback, RFC 1918, ULA, link-local incl. 169.254.169.254,
 * CGNAT, multicast, unspecified, broadcast, reserved/documentation, 6to4, Teredo...).
 */
export function refusalOf(address: string): string | null {
  let a: Parsed;
  try {
    a = ipaddr.parse(address);
  } catch {
    return `"${address}" is not an IP address`;
  }
  if (a.kind() === 'ipv6') {
    const v6 = a as ipaddr.IPv6;
    const range = v6.range();
    const inner = embeddedV4(v6, range);
    if (inner) {
      const why = refusalOf(inner.toString());
      return why ? `${address} embeds ${why}` : null;
    }
    if (range !== 'unicast') return `${address} is a ${describe(range)} address`;
    // Outside 2000::/3 nothing is globally routed (IPv4-compatible ::a.b.c.d, unassigned space).
    if (!v6.match(ipaddr.IPv6.parse('2000::'), 3)) return `${address} is not a global unicast address`;
    return null;
  }
  const range = (a as ipaddr.IPv4).range();
  return range === 'unicast' ? null : `${address} is a ${describe(range)} address`;
}

function describe(range: string): string {
  const names: Record<string, string> = {
    private: 'private (RFC 1918)',
    uniqueLocal: 'private (unique local)',
    linkLocal: 'link-local',
    loopback: 'loopback',
    carrierGradeNat: 'carrier-grade NAT',
    multicast: 'multicast',
    unspecified: 'unspecified',
    broadcast: 'broadcast',
    reserved: 'reserved',
    deprecatedSiteLocal: 'site-local',
    '6to4': '6to4 tunnel',
    teredo: 'Teredo tunnel',
  };
  return names[range] ?? `special-purpose (${range})`;
}

export interface CheckedTarget {
  url: URL;
  /** The one address the request goes to. */
  address: ResolvedAddress;
}

/**
 * Resolves `host` once and checks every address: all must be global unicast, or exempted by
 * SVC_NOTIFY_ALLOW. Answers the first address (the one to connect to) and whether every address
 * is exempted (what lets a cleartext protocol through).
 */
export async function checkHost(
  host: string,
  opts: OutboundOptions = {},
): Promise<{ address: ResolvedAddress; exempt: boolean }> {
  const allow = parseAllow(opts.allow ?? []);
  let addresses: ResolvedAddress[];
  if (isIP(host)) addresses = [{ address: host, family: isIP(host) === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await (opts.resolve ?? systemResolve)(host);
    } catch (e) {
      throw new OutboundRefused(
        `${host} does not resolve (${(e as { code?: string }).code ?? 'lookup failed'})`,
      );
    }
    if (!addresses.length) throw new OutboundRefused(`${host} does not resolve`);
  }
  const exempt = addresses.every((a) => allowed(ipaddr.parse(a.address), allow));
  for (const a of addresses) {
    if (allowed(ipaddr.parse(a.address), allow)) continue;
    const why = refusalOf(a.address);
    if (why) throw new OutboundRefused(host === a.address ? why : `${host} resolves to ${why}`);
  }
  return { address: addresses[0]!, exempt };
}

/** Validates the URL and resolves its host once; every address must pass, the first is used. */
export async function checkOutboundUrl(raw: string, opts: OutboundOptions = {}): Promise<CheckedTarget> {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new OutboundRefused('not a URL');
  }
  if (url.username || url.password) throw new OutboundRefused('the URL must not carry credentials');
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  if (!host) throw new OutboundRefused('the URL has no host');
  if (url.protocol !== 'https:' && url.protocol !== 'http:')
    throw new OutboundRefused('only https:// URLs are accepted');
  const httpRefused = new OutboundRefused(
    'only https:// URLs are accepted (http only for SVC_NOTIFY_ALLOW addresses)',
  );
  let checked: { address: ResolvedAddress; exempt: boolean };
  try {
    checked = await checkHost(host, opts);
  } catch (e) {
    // A plain-HTTP URL is refused for its scheme first: only exempted addresses may take one.
    if (url.protocol === 'http:') throw httpRefused;
    throw e;
  }
  if (url.protocol === 'http:' && !checked.exempt) throw httpRefused;
  return { url, address: checked.address };
}

/** What a POST sends besides its body. */
export interface PostOptions extends OutboundOptions {
  /** Extra request headers (a signature, a drain's own headers); never logged. */
  headers?: Record<string, string>;
  contentType?: string;
}

/**
 * POSTs a JSON body to a checked URL. Answers any HTTP status (a 3xx is a status, never
 * followed); throws OutboundRefused for a refused URL and a plain Error for network failures.
 */
export function postJson(raw: string, payload: unknown, opts: PostOptions = {}): Promise<OutboundResponse> {
  return postBody(raw, Buffer.from(JSON.stringify(payload)), opts);
}

/** POSTs `body` as it is (its content type from opts, JSON by default); the rules of postJson. */
export async function postBody(raw: string, body: Buffer, opts: PostOptions = {}): Promise<OutboundResponse> {
  const target = await checkOutboundUrl(raw, opts);
  const timeoutMs = opts.timeoutMs ?? OUTBOUND_TIMEOUT_MS;
  const maxBytes = opts.maxBytes ?? OUTBOUND_MAX_BYTES;
  const { url, address } = target;
  const request = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise<OutboundResponse>((resolve, reject) => {
    let settled = false;
    const done = (err: Error | null, value?: OutboundResponse) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      req.destroy();
      if (err) reject(err);
      else resolve(value!);
    };
    // One deadline for the whole exchange: connect, send, answer and body.
    const timer = setTimeout(
      () => done(new Error(`no complete answer within ${timeoutMs / 1000} s`)),
      timeoutMs,
    );
    const req = request(
      {
        protocol: url.protocol,
        hostname: url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname,
        port: url.port || undefined,
        path: `${url.pathname}${url.search}`,
        method: 'POST',
        // The connection goes to the checked address whatever the name resolves to now; the name
        // stays the TLS server name and the Host header.
        lookup: pinnedLookup(address),
        ...(url.protocol === 'https:' && opts.agent ? { agent: opts.agent } : { agent: false }),
        ...(url.protocol === 'https:' && !opts.agent && opts.ca ? { ca: opts.ca } : {}),
        headers: {
          ...opts.headers,
          'content-type': opts.contentType ?? 'application/json',
          'content-length': String(body.length),
          'user-agent': 'svc-notify',
        },
      },
      (res) => readAnswer(res, maxBytes, done),
    );
    req.on('error', (e) => done(new Error(networkReason(e))));
    req.end(body);
  });
}

/** A lookup that answers the one checked address, whatever it is asked. */
export function pinnedLookup(address: ResolvedAddress): LookupFunction {
  return (_host, options, cb) => {
    if ((options as { all?: boolean }).all)
      (cb as unknown as (e: null, a: ResolvedAddress[]) => void)(null, [address]);
    else cb(null, address.address, address.family);
  };
}

function readAnswer(
  res: IncomingMessage,
  maxBytes: number,
  done: (err: Error | null, value?: OutboundResponse) => void,
): void {
  const chunks: Buffer[] = [];
  let size = 0;
  res.on('data', (c: Buffer) => {
    const room = maxBytes - size;
    if (c.length > room) {
      // Stop reading: a server streaming megabytes gets its connection closed.
      chunks.push(c.subarray(0, room));
      done(null, {
        status: res.statusCode ?? 0,
        body: Buffer.concat(chunks).toString('utf8'),
        truncated: true,
      });
      return;
    }
    chunks.push(c);
    size += c.length;
  });
  res.on('end', () =>
    done(null, {
      status: res.statusCode ?? 0,
      body: Buffer.concat(chunks).toString('utf8'),
      truncated: false,
    }),
  );
  res.on('error', (e) => done(e));
}

export function networkReason(e: Error & { code?: string }): string {
  return e.code ? `${e.code}: ${e.message}` : e.message;
}
