// The wake path: requests Caddy sends for a sleeping app's hosts (lib/proxy/config.ts, the wake
// route). Each is held while the app wakes (lib/apps/sleep.ts), then answered by the app itself:
// this process forwards it to the app's container and streams the answer back, so the visitor
// sees the app's own answer, only later. Bounded by SVC_WAKE_TIMEOUT: past it, 503 with Retry-After.
//
// Trust: such a request carries the wake header, which Caddy sets (replacing a client's) to
// `<token> <appId> <service> <port>`; the token is this process's secret, known only to Caddy's
// config. A request with the header that does not come from a trusted proxy address with the token
// is refused 403, and never reaches the API either way. The app named is the one whose host Caddy
// matched; the request goes only to that app's own containers (their addresses as the deployment
// recorded them), on the port of its route.
import {
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import { timingSafeEqual } from 'node:crypto';
import type { Services as Env } from '#lib/http/handler.js';
import { WAKE_HEADER, dialAddress } from '#lib/proxy/config.js';
import { listUpstreams } from '#lib/proxy/upstreams.js';
import { buildBlockList, isTrusted } from '#lib/http/client-address.js';
import { ID_PATTERN } from '#lib/crypto/random.js';

const HEADER = WAKE_HEADER.toLowerCase();
/** As lib/compose's service names (not imported: that module brings the compose parser). */
const SERVICE_NAME = /^[a-z0-9][a-z0-9_-]{0,62}$/;
/** Connection-level headers: they describe one hop, not the request. */
const HOP = new Set([
  'connection',
  'keep-alive',
  'proxy-authenticate',
  'proxy-authorization',
  'proxy-connection',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  HEADER,
]);

export interface WakeTarget {
  appId: string;
  service: string;
  port: number;
}

export interface WakePath {
  /** Whether the request came through the wake route (it carries the header at all). */
  claims(req: IncomingMessage): boolean;
  handle(req: IncomingMessage, res: ServerResponse): void;
  /** A WebSocket (or other upgrade) to a sleeping app: the app is woken, the client told to retry. */
  handleUpgrade(req: IncomingMessage, socket: Duplex): void;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

export function createWakePath(env: Env): WakePath {
  const trusted = buildBlockList(env.config.trustedProxies);
  const peerOf = (req: IncomingMessage) => {
    const p = req.socket.remoteAddress ?? '';
    return p.startsWith('::ffff:') ? p.slice(7) : p;
  };

  /** The target Caddy named, or null when the header is not Caddy's. */
  const verify = (req: IncomingMessage): WakeTarget | null => {
    const raw = req.headers[HEADER];
    if (typeof raw !== 'string' || !isTrusted(trusted, peerOf(req))) return null;
    const [token, appId, service, port, extra] = raw.split(' ');
    if (extra !== undefined || !token || !appId || !service || !port) return null;
    if (!same(token, env.edge.wakeToken)) return null;
    if (!ID_PATTERN.test(appId) || !SERVICE_NAME.test(service) || !/^\d{1,5}$/.test(port)) return null;
    const n = Number(port);
    return n >= 1 && n <= 65535 ? { appId, service, port: n } : null;
  };

  const plain = (
    res: ServerResponse,
    status: number,
    code: string,
    error: string,
    headers: Record<string, string> = {},
  ) => {
    if (res.headersSent) return void res.destroy();
    res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', ...headers });
    res.end(`${JSON.stringify({ error, code })}\n`);
  };

  /** Waits for the wake, at most SVC_WAKE_TIMEOUT: true when the app is up. */
  const woken = async (t: WakeTarget): Promise<'up' | 'timeout' | 'failed'> => {
    env.sleeper.counts.wakeRequests++;
    let timer: NodeJS.Timeout | undefined;
    const limit = new Promise<'timeout'>(
      (r) => (timer = setTimeout(() => r('timeout'), env.config.wakeTimeoutSeconds * 1000)),
    );
    try {
      return await Promise.race([
        env.sleeper.wake(t.appId).then(
          () => 'up' as const,
          (err) => {
            env.log.warn({ err: String(err), app_id: t.appId }, 'wake failed');
            return 'failed' as const;
          },
        ),
        limit,
      ]);
    } finally {
      clearTimeout(timer);
    }
  };

  const forward = async (req: IncomingMessage, res: ServerResponse, t: WakeTarget) => {
    const up = (await listUpstreams(env.db)).find((u) => u.app_id === t.appId && u.service === t.service);
    const address = up?.addresses[0];
    if (!address)
      return plain(
        res,
        503,
        'service_unavailable',
        'The app woke but this service has no running container.',
        { 'retry-after': '5' },
      );
    const headers: IncomingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && v !== undefined) headers[k] = v;
    const [host, port] = splitDial(dialAddress(address, t.port));
    const out = httpRequest(
      { host, port, method: req.method, path: req.url, headers, agent: false },
      (answer) => {
        const back: Record<string, string | string[]> = {};
        for (const [k, v] of Object.entries(answer.headers)) if (!HOP.has(k) && v !== undefined) back[k] = v;
        res.writeHead(answer.statusCode ?? 502, answer.statusMessage, back);
        answer.pipe(res);
        answer.on('error', () => res.destroy());
      },
    );
    out.on('error', () => plain(res, 502, 'internal_error', 'The app did not answer after waking.'));
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
    });
    req.pipe(out);
  };

  return {
    claims: (req) => req.headers[HEADER] !== undefined,
    handle(req, res) {
      const t = verify(req);
      if (!t) return plain(res, 403, 'forbidden', 'This request did not come through the proxy.');
      void woken(t)
        .then((state) => {
          if (state === 'up') return forward(req, res, t);
          const why =
            state === 'timeout'
              ? 'The app is still waking up; try again in a moment.'
              : 'The app could not be woken; try again in a moment.';
          return plain(res, 503, 'service_unavailable', why, { 'retry-after': '5' });
        })
        .catch((err) => {
          env.log.error({ err }, 'wake path failed');
          plain(res, 500, 'internal_error', 'Internal error');
        });
    },
    handleUpgrade(req, socket) {
      const t = verify(req);
      if (t) void woken(t).catch(() => {});
      const status = t ? '503 Service Unavailable\r\nRetry-After: 1' : '403 Forbidden';
      socket.end(`HTTP/1.1 ${status}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`);
    },
  };
}

function splitDial(dial: string): [string, number] {
  const i = dial.lastIndexOf(':');
  return [dial.slice(0, i).replace(/^\[|\]$/g, ''), Number(dial.slice(i + 1))];
}
