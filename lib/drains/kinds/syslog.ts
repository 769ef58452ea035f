// Syslog: RFC 5424 messages over TCP (`syslog://`, only to SVC_NOTIFY_ALLOW addresses: it is
// cleartext) or TLS (`syslog+tls://`, RFC 5425's port 6514 by default), framed by octet counting
// (RFC 6587), one connection kept per drain. The app, service, container and stream travel as
// structured data; stderr is severity err, everything else info, facility user.
//
// A syslog receiver acknowledges nothing: a batch counts as delivered once the kernel took it, so
// lines written in the instant a receiver dies can be lost without an error (HTTP kinds are
// answered per batch and do not have this gap).
import { hostname } from 'node:os';
import type { Socket } from 'node:net';
import { badRequest } from '../../http/errors.js';
import { checkHost, OutboundRefused } from '../../net/outbound.js';
import { connectOutbound } from '../../net/socket.js';
import type { BatchResult, DrainKindDef, DrainLine, DrainTarget } from './types.js';

/** The structured data's id: name@enterprise number (32473 is the number set aside for examples). */
export const SD_ID = 'svc@32473';
const WRITE_TIMEOUT_MS = 10_000;

export interface SyslogAddress {
  tls: boolean;
  host: string;
  port: number;
}

export function parseSyslogUrl(raw: string): SyslogAddress {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw badRequest('The syslog URL is not a URL', [{ field: 'url', message: 'not a URL' }]);
  }
  if (u.protocol !== 'syslog:' && u.protocol !== 'syslog+tls:')
    throw badRequest(
      'A syslog drain URL is syslog+tls://host[:6514] (or syslog://host[:514] to an exempted address)',
      [{ field: 'url', message: 'syslog+tls:// or syslog://' }],
    );
  if (!u.hostname || u.username || u.password || (u.pathname && u.pathname !== '/'))
    throw badRequest('A syslog drain URL names a host and a port only', [
      { field: 'url', message: 'host and port' },
    ]);
  const tls = u.protocol === 'syslog+tls:';
  return { tls, host: u.hostname, port: u.port ? Number(u.port) : tls ? 6514 : 514 };
}

/** PRINTUSASCII only, at most `max` characters; NILVALUE when empty (RFC 5424 section 6). */
const token = (s: string, max: number) => s.replace(/[^\x21-\x7e]/g, '_').slice(0, max) || '-';
/** A structured-data parameter value: `"`, `\` and `]` escaped. */
const param = (s: string) => s.replace(/[\\"\]]/g, (c) => `\\${c}`);

const HOST = token(hostname(), 255);

/** One RFC 5424 message for a line. */
export function syslogMessage(l: DrainLine, host = HOST): string {
  const severity = l.stream === 'stderr' || l.stream === 'error' ? 3 : 6;
  const sd =
    `[${SD_ID} app="${param(l.app)}" app_id="${param(l.appId)}" service="${param(l.service)}"` +
    ` container="${param(l.container)}" stream="${param(l.stream)}" source="${l.source}"]`;
  return `<${8 + severity}>1 ${new Date(l.at).toISOString()} ${host} ${token(l.app, 48)} ${token(l.service, 128)} ${token(l.source, 32)} ${sd} ${l.line}`;
}

/** A batch as octet-counted frames (RFC 6587 section 3.4.1). */
export function syslogFrames(batch: readonly DrainLine[]): Buffer {
  const parts: Buffer[] = [];
  for (const l of batch) {
    const m = Buffer.from(syslogMessage(l), 'utf8');
    parts.push(Buffer.from(`${m.length} `), m);
  }
  return Buffer.concat(parts);
}

class SyslogSender {
  private socket: Socket | null = null;
  private readonly addr: SyslogAddress;

  constructor(private readonly target: DrainTarget) {
    this.addr = parseSyslogUrl(target.url);
  }

  private async connection(): Promise<Socket> {
    if (this.socket && !this.socket.destroyed) return this.socket;
    const { socket } = await connectOutbound(
      { host: this.addr.host, port: this.addr.port, tls: this.addr.tls },
      this.target.transport,
    );
    socket.on('data', () => {}); // a receiver has nothing to say; whatever it says is read and dropped
    socket.on('error', () => socket.destroy());
    socket.on('close', () => {
      if (this.socket === socket) this.socket = null;
    });
    this.socket = socket;
    return socket;
  }

  async send(batch: readonly DrainLine[]): Promise<BatchResult> {
    try {
      const s = await this.connection();
      await write(s, syslogFrames(batch));
      return { ok: true, status: null };
    } catch (e) {
      this.close();
      if (e instanceof OutboundRefused)
        return { ok: false, status: null, error: `refused: ${e.reason}`, refused: true };
      return { ok: false, status: null, error: (e as Error).message };
    }
  }

  close(): void {
    this.socket?.destroy();
    this.socket = null;
  }
}

/** Resolves once the kernel took the bytes; a receiver that stops reading fails it after 10 s. */
function write(s: Socket, buf: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      s.destroy();
      reject(new Error(`the receiver took nothing for ${WRITE_TIMEOUT_MS / 1000} s`));
    }, WRITE_TIMEOUT_MS);
    const onClose = () => {
      clearTimeout(timer);
      reject(new Error('the receiver closed the connection'));
    };
    s.once('close', onClose);
    s.write(buf, (err) => {
      clearTimeout(timer);
      s.off('close', onClose);
      if (err) reject(new Error(err.message));
      else resolve();
    });
  });
}

export const syslog: DrainKindDef = {
  http: false,
  check: async (url, guard) => {
    const a = parseSyslogUrl(url);
    const { exempt } = await checkHost(a.host, guard);
    if (!a.tls && !exempt)
      throw new OutboundRefused(
        'syslog:// is cleartext: use syslog+tls:// (syslog:// only to SVC_NOTIFY_ALLOW addresses)',
      );
  },
  hint: (url) => {
    const u = new URL(url);
    return `${u.protocol}//${u.host}`;
  },
  sender: (target) => new SyslogSender(target),
};
