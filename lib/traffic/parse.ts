import { isIP } from 'node:net';

/** One request as read from the proxy's access log. */
export interface AccessEntry {
  /** Request time, epoch milliseconds (from the log line's `ts`). */
  at: number;
  /** Client address: `request.client_ip`, else `request.remote_ip`; canonical, no zone. */
  ip: string;
  host: string;
  method: string;
  /** Request path without its query string: queries often carry tokens. */
  path: string;
  status: number;
  /** Response body bytes (`size`); 0 when absent. */
  bytes: number;
  /** Time to serve, milliseconds (`duration`, seconds in the log); 0 when absent. */
  durationMs: number;
}

/** A line longer than this is dropped (and counted as a parse error) to keep memory bounded. */
export const MAX_LINE_BYTES = 1024 * 1024;
const MAX_FIELD_CHARS = 256;

function shortString(v: unknown): string {
  if (typeof v !== 'string') return '';
  return v.length > MAX_FIELD_CHARS ? v.slice(0, MAX_FIELD_CHARS) : v;
}

/** Same answer as `isIP(s) === 4` (dotted quad, no leading zeros), without a regular expression. */
function isIPv4Text(s: string): boolean {
  const n = s.length;
  if (n < 7 || n > 15) return false;
  let parts = 0;
  let i = 0;
  while (i < n) {
    const start = i;
    let v = 0;
    while (i < n) {
      const c = s.charCodeAt(i);
      if (c < 48 || c > 57) break;
      v = v * 10 + (c - 48);
      i++;
    }
    const len = i - start;
    if (len === 0 || len > 3 || v > 255 || (len > 1 && s.charCodeAt(start) === 48)) return false;
    parts++;
    if (i === n) break;
    if (s.charCodeAt(i) !== 46 || parts === 4) return false;
    i++;
    if (i === n) return false;
  }
  return parts === 4;
}

/**
 * Canonical client address or null when the value is not an IP address.
 * The zone (`fe80::1%eth0`) names a local interface, not a client, so it is dropped;
 * IPv4-mapped IPv6 is folded to IPv4 so one client has one key and allowlist CIDRs match.
 */
export function normalizeIp(v: unknown): string | null {
  if (typeof v !== 'string' || v.length === 0 || v.length > 64) return null;
  let ip = v;
  const zone = ip.indexOf('%');
  if (zone !== -1) ip = ip.slice(0, zone);
  if (isIPv4Text(ip)) return ip;
  if (ip.indexOf(':') === -1 || isIP(ip) !== 6) return null;
  ip = ip.toLowerCase();
  if (ip.startsWith('::ffff:')) {
    const tail = ip.slice(7);
    if (isIP(tail) === 4) return tail;
  }
  return ip;
}

function buildEntry(
  clientIp: unknown,
  remoteIp: unknown,
  status: unknown,
  ts: unknown,
  host: unknown,
  method: unknown,
  uri: unknown,
  size: unknown,
  duration: unknown,
  fallbackAt: number,
): AccessEntry | null {
  const ip = normalizeIp(clientIp !== undefined && clientIp !== '' ? clientIp : remoteIp);
  if (ip === null) return null;
  if (typeof status !== 'number' || !Number.isInteger(status) || status < 0 || status > 999) return null;
  const at = typeof ts === 'number' && Number.isFinite(ts) && ts > 0 ? Math.floor(ts * 1000) : fallbackAt;
  let path = shortString(uri);
  const qm = path.indexOf('?');
  if (qm !== -1) path = path.slice(0, qm);
  const bytes = typeof size === 'number' && size > 0 && size < 1e15 ? Math.floor(size) : 0;
  // Caddy 2.6 logs seconds as a float; a duration string ("1.2ms", newer formats) is not worth a parser here.
  const durationMs = typeof duration === 'number' && duration > 0 && duration < 1e7 ? duration * 1000 : 0;
  return { at, ip, host: shortString(host), method: shortString(method), path, status, bytes, durationMs };
}

/**
 * Turns one line of Caddy's JSON access log into an entry, or null when the line is not
 * a usable access record (not JSON, not an object, no valid client address, no status).
 * `fallbackAt` stands in for a missing `ts`.
 */
export function parseAccessLine(line: string, fallbackAt = Date.now()): AccessEntry | null {
  let rec: unknown;
  try {
    rec = JSON.parse(line);
  } catch {
    return null;
  }
  if (rec === null || typeof rec !== 'object') return null;
  const r = rec as Record<string, unknown>;
  const req = r.request;
  if (req === null || typeof req !== 'object') return null;
  const q = req as Record<string, unknown>;
  return buildEntry(
    q.client_ip,
    q.remote_ip,
    r.status,
    r.ts,
    q.host,
    q.method,
    q.uri,
    r.size,
    r.duration,
    fallbackAt,
  );
}

/**
 * Splits a byte stream into lines with a bounded carry-over: a partial last line waits for
 * its end, and a line over `maxLineBytes` is skipped up to its newline and reported once
 * through `onOversize`, so a runaway line can never grow the buffer.
 */
export class LineSplitter {
  private carry: Buffer | null = null;
  private skipping = false;

  constructor(
    private readonly onLine: (line: string) => void,
    private readonly onOversize: () => void,
    private readonly maxLineBytes = MAX_LINE_BYTES,
  ) {}

  /** Bytes held for an unfinished line. */
  get pendingBytes(): number {
    return this.carry === null ? 0 : this.carry.length;
  }

  /** Feeds `buf[0..len)`; the buffer may be reused by the caller afterwards. */
  push(buf: Buffer, len = buf.length): void {
    let pos = 0;
    if (this.skipping || this.carry !== null) {
      const nl = buf.indexOf(10, 0);
      if (nl === -1 || nl >= len) {
        if (!this.skipping) {
          const carry = this.carry as Buffer;
          if (carry.length + len > this.maxLineBytes) {
            this.carry = null;
            this.skipping = true;
          } else {
            this.carry = Buffer.concat([carry, buf.subarray(0, len)]);
          }
        }
        return;
      }
      if (this.skipping) {
        this.skipping = false;
        this.onOversize();
      } else {
        const carry = this.carry as Buffer;
        this.carry = null;
        if (carry.length + nl > this.maxLineBytes) this.onOversize();
        else this.emit(Buffer.concat([carry, buf.subarray(0, nl)]).toString('utf8'));
      }
      pos = nl + 1;
    }
    for (;;) {
      const nl = buf.indexOf(10, pos);
      if (nl === -1 || nl >= len) break;
      if (nl - pos > this.maxLineBytes) this.onOversize();
      else if (nl > pos) this.emit(buf.toString('utf8', pos, nl));
      pos = nl + 1;
    }
    if (pos < len) {
      if (len - pos > this.maxLineBytes) this.skipping = true;
      else this.carry = Buffer.from(buf.subarray(pos, len));
    }
  }

  /** Drops an unfinished line (the file it came from is gone); true when there was one. */
  reset(): boolean {
    const had = this.carry !== null || this.skipping;
    this.carry = null;
    this.skipping = false;
    return had;
  }

  private emit(line: string): void {
    // Blank lines (a lone "\r" included) are padding, not records.
    if (line.length === 0 || (line.length === 1 && line === '\r')) return;
    this.onLine(line);
  }
}
