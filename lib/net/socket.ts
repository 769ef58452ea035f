// Raw outbound connections (syslog over TCP or TLS, SMTP) under the same guard as outbound HTTP:
// the host is resolved once and checked (lib/net/outbound.ts checkHost), the socket goes to the
// checked address, TLS names the host it was asked for, and a cleartext connection is allowed
// only when every address is exempted by SVC_NOTIFY_ALLOW.
import { connect as netConnect, type Socket } from 'node:net';
import { connect as tlsConnect, type TLSSocket } from 'node:tls';
import { checkHost, OutboundRefused, OUTBOUND_TIMEOUT_MS, type OutboundOptions } from './outbound.js';

export interface SocketTarget {
  host: string;
  port: number;
  /** TLS from the first byte; otherwise plain TCP (refused unless the host is exempted). */
  tls: boolean;
  /** Plain TCP that will be upgraded (SMTP STARTTLS): allowed whatever the address. */
  upgradable?: boolean;
}

export interface OpenedSocket {
  socket: Socket | TLSSocket;
  /** Every address of the host is exempted (cleartext allowed). */
  exempt: boolean;
}

/** Connects to the checked address within the guard's deadline; the caller owns the socket. */
export async function connectOutbound(
  target: SocketTarget,
  opts: OutboundOptions = {},
): Promise<OpenedSocket> {
  const host = target.host.startsWith('[') ? target.host.slice(1, -1) : target.host;
  if (!host) throw new OutboundRefused('the URL has no host');
  const { address, exempt } = await checkHost(host, opts);
  if (!target.tls && !target.upgradable && !exempt)
    throw new OutboundRefused(
      'a cleartext connection is allowed only to SVC_NOTIFY_ALLOW addresses: use TLS',
    );
  const timeoutMs = opts.timeoutMs ?? OUTBOUND_TIMEOUT_MS;
  const socket = await new Promise<Socket | TLSSocket>((resolve, reject) => {
    const s = target.tls
      ? tlsConnect({
          host: address.address,
          port: target.port,
          servername: isIpLiteral(host) ? undefined : host,
          ...(opts.ca ? { ca: opts.ca } : {}),
        })
      : netConnect({ host: address.address, port: target.port });
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`no connection within ${timeoutMs / 1000} s`));
    }, timeoutMs);
    s.once(target.tls ? 'secureConnect' : 'connect', () => {
      clearTimeout(timer);
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', (e: Error & { code?: string }) => {
      clearTimeout(timer);
      s.destroy();
      reject(new Error(e.code ? `${e.code}: ${e.message}` : e.message));
    });
  });
  return { socket, exempt };
}

/** Upgrades a connected socket to TLS for `host` (SMTP STARTTLS). */
export function startTls(socket: Socket, host: string, opts: OutboundOptions = {}): Promise<TLSSocket> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({
      socket,
      servername: isIpLiteral(host) ? undefined : host,
      ...(opts.ca ? { ca: opts.ca } : {}),
    });
    s.once('secureConnect', () => {
      s.removeAllListeners('error');
      resolve(s);
    });
    s.once('error', (e: Error & { code?: string }) => {
      s.destroy();
      reject(new Error(e.code ? `${e.code}: ${e.message}` : e.message));
    });
  });
}

const isIpLiteral = (h: string) => /^[0-9.]+$/.test(h) || h.includes(':');
