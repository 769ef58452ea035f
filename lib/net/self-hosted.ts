// The guarded client for services an operator runs themselves (a container registry on the LAN
// or on this host). Unlike notification URLs, loopback and private addresses are the ordinary case
// here and are allowed, over https or plain http. What stays refused: link-local (cloud metadata,
// 169.254.169.254), multicast, unspecified, broadcast and reserved addresses, and the control
// plane's own endpoints (its API port and Caddy's admin port on this host's own addresses), so a
// stored host never turns the control plane's credentials or requests against itself. The name is
// resolved once; the request goes to that address, follows no redirect, and is bounded in time
// and size, like every outbound request (lib/net/outbound.ts).
import { request as httpsRequest } from 'node:https';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { lookup as dnsLookup } from 'node:dns/promises';
import { networkInterfaces } from 'node:os';
import { isIP, type LookupFunction } from 'node:net';
import { rootCertificates } from 'node:tls';
import ipaddr from 'ipaddr.js';
import { OutboundRefused, refusalOf, type ResolvedAddress, type Resolver } from './outbound.js';

export { OutboundRefused };

/** The name does not resolve now: nothing was refused, nothing can be reached either. */
export class HostUnresolved extends OutboundRefused {}

const SELF_HOSTED_RANGES = new Set(['loopback', 'private', 'uniqueLocal', 'carrierGradeNat']);

export interface SelfHostedPolicy {
  /** Ports of the control plane's own endpoints (SVC_PORT, Caddy's admin API). */
  controlPorts: readonly number[];
  resolve?: Resolver;
}

const systemResolve: Resolver = async (host) =>
  (await dnsLookup(host, { all: true, verbatim: true })).map((a) => ({
    address: a.address,
    family: a.family === 6 ? 6 : 4,
  }));

function unmapped(address: string): ipaddr.IPv4 | ipaddr.IPv6 {
  const a = ipaddr.parse(address);
  return a.kind() === 'ipv6' && (a as ipaddr.IPv6).isIPv4MappedAddress()
    ? (a as ipaddr.IPv6).toIPv4Address()
    : a;
}

/** Whether the address is one this host answers on (loopback, unspecified, an interface's). */
export function isOwnAddress(address: string): boolean {
  const a = unmapped(address);
  if (a.range() === 'loopback' || a.range() === 'unspecified') return true;
  const mine = Object.values(networkInterfaces()).flatMap((l) => l ?? []);
  return mine.some((i) => {
    try {
      return unmapped(i.address).toString() === a.toString();
    } catch {
      return false;
    }
  });
}

/** Why the address may not be reached by a self-hosted client at `port`, or null. */
export function selfHostedRefusal(address: string, port: number, policy: SelfHostedPolicy): string | null {
  const why = refusalOf(address);
  if (why && !SELF_HOSTED_RANGES.has(unmapped(address).range())) return why;
  if (policy.controlPorts.includes(port) && isOwnAddress(address))
    return `${address}:${port} is the control plane's own endpoint`;
  return null;
}

/** Resolves `host` once and checks every address; answers the one a request must go to. */
export async function checkSelfHosted(
  host: string,
  port: number,
  policy: SelfHostedPolicy,
): Promise<ResolvedAddress> {
  const bare = host.replace(/^\[|\]$/g, '');
  let addresses: ResolvedAddress[];
  if (isIP(bare)) addresses = [{ address: bare, family: isIP(bare) === 6 ? 6 : 4 }];
  else {
    try {
      addresses = await (policy.resolve ?? systemResolve)(bare);
    } catch (e) {
      throw new HostUnresolved(
        `${bare} does not resolve (${(e as { code?: string }).code ?? 'lookup failed'})`,
      );
    }
    if (!addresses.length) throw new HostUnresolved(`${bare} does not resolve`);
  }
  for (const a of addresses) {
    const why = selfHostedRefusal(a.address, port, policy);
    if (why) throw new OutboundRefused(bare === a.address ? why : `${bare} resolves to ${why}`);
  }
  return addresses[0]!;
}

export interface GuardedAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  /** At most maxBytes of the body. */
  body: string;
}

export interface GuardedGet {
  url: URL;
  /** The checked address (checkSelfHosted): the only one the request goes to. */
  address: ResolvedAddress;
  headers?: Record<string, string>;
  /** Extra certificate authorities to trust, beside the system's (PEM). */
  ca?: string[];
  timeoutMs?: number;
  maxBytes?: number;
}

/** A GET to a checked address; any status is an answer (a 3xx is never followed). */
export function guardedGet(g: GuardedGet): Promise<GuardedAnswer> {
  const timeoutMs = g.timeoutMs ?? 10_000;
  const maxBytes = g.maxBytes ?? 64 * 1024;
  const pinned: LookupFunction = (_host, options, cb) => {
    if ((options as { all?: boolean }).all)
      (cb as unknown as (e: null, a: ResolvedAddress[]) => void)(null, [g.address]);
    else cb(null, g.address.address, g.address.family);
  };
  const https = g.url.protocol === 'https:';
  return new Promise<GuardedAnswer>((resolve, reject) => {
    const timer = setTimeout(() => {
      req.destroy(new Error(`no answer within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    const req = (https ? httpsRequest : httpRequest)(
      {
        hostname: g.url.hostname.replace(/^\[|\]$/g, ''),
        port: g.url.port || undefined,
        path: `${g.url.pathname}${g.url.search}`,
        method: 'GET',
        lookup: pinned,
        agent: false,
        ...(https && g.ca?.length ? { ca: [...rootCertificates, ...g.ca] } : {}),
        headers: { 'user-agent': 'svc', ...g.headers },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          if (size >= maxBytes) return;
          chunks.push(c.subarray(0, maxBytes - size));
          size += c.length;
          if (size >= maxBytes) res.destroy();
        });
        const done = () => {
          clearTimeout(timer);
          resolve({
            status: res.statusCode ?? 0,
            headers: res.headers,
            body: Buffer.concat(chunks).toString(),
          });
        };
        res.on('end', done);
        res.on('close', done);
        res.on('error', done);
      },
    );
    req.on('error', (e: Error & { code?: string }) => {
      clearTimeout(timer);
      reject(new Error(e.code ? `${e.code}: ${e.message}` : e.message));
    });
    req.end();
  });
}
