// Caddy's admin API, and nothing else: the control plane never edits a Caddyfile and never runs
// `caddy`. Every call opens a fresh connection: Caddy restarts its admin server on each config
// load and closes the sockets it had, so a pooled socket would fail the next call. The endpoint is an
// http:// origin or, in Caddy's own syntax, a unix socket (`unix//run/caddy/admin.sock`): a socket in
// a folder only the control plane may open keeps every other local process (and a build fetching
// loopback URLs) away from a config that holds uploaded private keys.
import { request } from 'node:http';

export class CaddyError extends Error {
  constructor(
    message: string,
    /** false: Caddy answered and refused; true: it could not be reached at all. */
    readonly unreachable: boolean,
  ) {
    super(message);
  }
}

export interface CaddyClient {
  /** The http:// origin, or `unix//<path>`. */
  readonly adminUrl: string;
  /** The admin endpoint as Caddy's `admin.listen` writes it: host:port, or `unix//<path>`. */
  readonly listen: string;
  /** The whole running config (null when Caddy runs with none). */
  getConfig(): Promise<unknown>;
  /** Replaces the whole config in one step (POST /load). */
  load(config: unknown): Promise<void>;
  /** Whether the admin endpoint answers. */
  reachable(): Promise<boolean>;
  /**
   * The reverse proxy's upstreams in use: `host:port` -> requests in flight, WebSockets included
   * (an upgraded connection counts until it closes). An address no request uses is absent.
   */
  upstreams(): Promise<Map<string, number>>;
}

export interface CaddyClientOptions {
  timeoutMs?: number;
  loadTimeoutMs?: number;
  /** Bound on a response body (the config holds uploaded certificates, so it can be large). */
  maxBytes?: number;
}

interface Reply {
  status: number;
  body: string;
}

// ENOENT: a unix socket is briefly absent while Caddy swaps its admin server.
const RETRYABLE = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ENOENT']);

/** Where the admin API listens: a TCP origin, or a unix socket path. */
type Target = { url: URL; socketPath?: undefined } | { url?: undefined; socketPath: string };

/** `unix//<absolute path>` (Caddy's network address syntax) to the socket path, else null. */
export function unixAdminPath(address: string): string | null {
  return address.startsWith('unix//') ? address.slice('unix/'.length) : null;
}

function call(
  target: Target,
  method: 'GET' | 'POST',
  path: string,
  body: string | undefined,
  timeoutMs: number,
  maxBytes: number,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request(
      {
        // On a unix socket Caddy 2.6 accepts only the empty Host of a request without a host name (RFC 9112 3.2);
        // Node would write "localhost" unless told not to.
        ...(target.url
          ? { host: target.url.hostname.replace(/^\[|\]$/g, ''), port: Number(target.url.port) || 80 }
          : { socketPath: target.socketPath, setHost: false }),
        method,
        path,
        agent: false,
        timeout: timeoutMs,
        headers: {
          host: target.url ? target.url.host : '',
          connection: 'close',
          ...(body !== undefined
            ? { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }
            : {}),
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > maxBytes) {
            req.destroy(Object.assign(new Error('response too large'), { code: 'ETOOBIG' }));
            return;
          }
          chunks.push(c);
        });
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(Object.assign(new Error('timed out'), { code: 'ETIMEDOUT' })));
    req.on('error', reject);
    req.end(body);
  });
}

function errorText(status: number, body: string): string {
  let msg = body.trim();
  try {
    const j = JSON.parse(body) as { error?: unknown };
    if (typeof j.error === 'string') msg = j.error;
  } catch {
    /* plain text */
  }
  msg = msg.replace(/\s+/g, ' ');
  return `${status}${msg ? `: ${msg.length > 400 ? `${msg.slice(0, 400)}...` : msg}` : ''}`;
}

export function createCaddyClient(adminUrl: string, opts: CaddyClientOptions = {}): CaddyClient {
  const socketPath = unixAdminPath(adminUrl);
  const target: Target = socketPath ? { socketPath } : { url: new URL(adminUrl) };
  const timeoutMs = opts.timeoutMs ?? 5_000;
  const loadTimeoutMs = opts.loadTimeoutMs ?? 60_000;
  const maxBytes = opts.maxBytes ?? 32 * 1024 * 1024;
  const shown = target.url ? target.url.origin : adminUrl;
  const where = `Caddy's admin API at ${shown}`;

  async function send(
    method: 'GET' | 'POST',
    path: string,
    body: string | undefined,
    timeout: number,
  ): Promise<Reply> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await call(target, method, path, body, timeout, maxBytes);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code ?? '';
        // A refused or reset connection while Caddy swaps its admin server is worth retrying (twice,
        // 250 then 500 ms: loads in quick succession can meet two swaps in a row); the calls made
        // here are idempotent (a read, or a load of the whole config).
        if (attempt < 2 && RETRYABLE.has(code)) {
          await new Promise((r) => setTimeout(r, 250 * (attempt + 1)));
          continue;
        }
        throw new CaddyError(`${where} is unreachable (${code || (e as Error).message})`, true);
      }
    }
  }

  return {
    adminUrl: shown,
    listen: !target.url
      ? adminUrl
      : target.url.host.includes(':')
        ? target.url.host
        : `${target.url.host}:80`,
    async getConfig() {
      const r = await send('GET', '/config/', undefined, timeoutMs);
      if (r.status !== 200) throw new CaddyError(`${where} answered ${errorText(r.status, r.body)}`, false);
      try {
        return JSON.parse(r.body || 'null');
      } catch {
        throw new CaddyError(`${where} answered something that is not JSON`, false);
      }
    },
    async load(config) {
      const r = await send('POST', '/load', JSON.stringify(config), loadTimeoutMs);
      if (r.status !== 200)
        throw new CaddyError(`Caddy refused the configuration (${errorText(r.status, r.body)})`, false);
    },
    async upstreams() {
      const r = await send('GET', '/reverse_proxy/upstreams', undefined, timeoutMs);
      if (r.status !== 200) throw new CaddyError(`${where} answered ${errorText(r.status, r.body)}`, false);
      const out = new Map<string, number>();
      try {
        const list = JSON.parse(r.body || '[]') as Array<{ address?: unknown; num_requests?: unknown }>;
        for (const u of Array.isArray(list) ? list : [])
          if (typeof u.address === 'string' && typeof u.num_requests === 'number')
            out.set(u.address, (out.get(u.address) ?? 0) + u.num_requests);
      } catch {
        throw new CaddyError(`${where} answered something that is not JSON`, false);
      }
      return out;
    },
    async reachable() {
      try {
        await send('GET', '/config/admin', undefined, timeoutMs);
        return true;
      } catch {
        return false;
      }
    },
  };
}
