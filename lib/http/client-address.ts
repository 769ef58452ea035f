// The client's address: the socket peer, or X-Forwarded-For only when the peer is a trusted proxy.
import { BlockList, isIP } from 'node:net';

export function buildBlockList(entries: string[]): BlockList {
  const list = new BlockList();
  for (const e of entries) {
    const [addr, bits] = e.split('/');
    const type = isIP(addr!) === 6 ? 'ipv6' : 'ipv4';
    if (bits !== undefined) list.addSubnet(addr!, Number(bits), type);
    else list.addAddress(addr!, type);
  }
  return list;
}

function normalise(ip: string): string {
  // IPv4 peers on a dual-stack socket appear as ::ffff:a.b.c.d.
  return ip.startsWith('::ffff:') && isIP(ip.slice(7)) === 4 ? ip.slice(7) : ip;
}

export function isTrusted(list: BlockList, ip: string): boolean {
  const family = isIP(ip);
  if (!family) return false;
  return list.check(ip, family === 6 ? 'ipv6' : 'ipv4');
}

/**
 * Walks X-Forwarded-For from the right, skipping trusted proxies; the first untrusted hop is the
 * client. A client that is not a trusted proxy cannot move its own address by sending the header.
 */
export function clientAddress(peer: string | undefined, xff: string | null, trusted: BlockList): string {
  const ip = normalise(peer ?? '');
  if (!xff || !isTrusted(trusted, ip)) return ip || 'unknown';
  const hops = xff
    .split(',')
    .map((s) => normalise(s.trim()))
    .filter(Boolean);
  let client = ip;
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = hops[i]!;
    if (!isIP(hop)) break;
    client = hop;
    if (!isTrusted(trusted, hop)) break;
  }
  return client;
}

export function forwardedSecure(peer: string | undefined, proto: string | null, trusted: BlockList): boolean {
  if (!proto) return false;
  return isTrusted(trusted, normalise(peer ?? '')) && proto.split(',')[0]!.trim().toLowerCase() === 'https';
}
