// The wake path: requests Caddy hands to the control plane for an app's hosts (lib/proxy/config.ts:
// on one host, whenever the lookup of the app's containers finds nothing, which is the case while it
// sleeps or is stopped, or when the resolver does not answer; in cluster mode, the wake route of a
// sleeping app). Each is held while the app wakes (lib/sleep), then answered by the app itself:
// this process forwards it to the app's container and streams the answer back, so the visitor
// sees the app's own answer, only later. Bounded by SVC_WAKE_TIMEOUT: past it, 503 with Retry-After.
//
// Trust: such a request carries the wake header, which Caddy sets (replacing a client's) to
// `<token> <appId> <service> <port>`; the token is this process's secret, known only to Caddy's
// config. A request with the header that does not come from a trusted proxy address with the token
// is refused 403, and never reaches the API either way. The app named is the one whose host Caddy
// matched; the request goes only to that app's own containers (their addresses as the deployment
// recorded them), on the port of its route.
//
// A WebSocket (or other upgrade) request is held the same way, with the same checks, then
// connected to the same container: the app's own handshake answer goes back to the client and the
// two sockets are piped until either closes, which closes the other, or until neither carried a
// byte for SVC_WAKE_IDLE seconds.
//
// Bounded: at most SVC_WAKE_MAX_HELD requests and upgrades at once (from arrival until answered,
// or for an upgrade until closed); one more is answered 503 with Retry-After at once.
import {
  STATUS_CODES,
  request as httpRequest,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import type { Duplex } from 'node:stream';
import { timingSafeEqual } from 'node:crypto';
import type { Services } from '#lib/http/handler.js';
import { WAKE_HEADER, dialAddress } from '#lib/proxy/config.js';
import { listUpstreams } from '#lib/proxy/upstreams-store.js';
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
  /** A WebSocket (or other upgrade) to a sleeping app: held like a request, then piped to the app. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void;
  /** Ends the upgrades held or piped (the HTTP server does not close those sockets itself). */
  close(): void;
}

function same(a: string, b: string): boolean {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
}

const BUSY = 'Too many requests are waiting for sleeping apps; try again in a moment.';

export function createWakePath(env: Services): WakePath {
  /** Upgrade sockets held for a wake or piped to an app, both ends: closed at shutdown. */
  const held = new Set<Duplex>();
  /** Requests and upgrades held now (waiting, forwarded or piped), against SVC_WAKE_MAX_HELD. */
  let holding = 0;
  /** One more held until `release` (idempotent), or null when the wake path is full. */
  const admit = (): (() => void) | null => {
    if (holding >= env.config.wakeMaxHeld) return null;
    holding++;
    let done = false;
    return () => {
      if (!done) ((done = true), holding--);
    };
  };
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

  /** Where the woken app's service listens: its first container as the deployment recorded it. */
  const dialOf = async (t: WakeTarget): Promise<[string, number] | null> => {
    const up = (await listUpstreams(env.db)).find((u) => u.app_id === t.appId && u.service === t.service);
    const address = up?.addresses[0];
    return address ? splitDial(dialAddress(address, t.port)) : null;
  };
  const NO_CONTAINER = 'This service has no running container right now.';
  const waitAnswer = (state: 'timeout' | 'failed') =>
    state === 'timeout'
      ? 'The app is still waking up; try again in a moment.'
      : 'The app could not be woken; try again in a moment.';

  const forward = async (req: IncomingMessage, res: ServerResponse, t: WakeTarget) => {
    const dial = await dialOf(t);
    if (!dial) return plain(res, 503, 'service_unavailable', NO_CONTAINER, { 'retry-after': '5' });
    const headers: IncomingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && v !== undefined) headers[k] = v;
    const [host, port] = dial;
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

  const path: WakePath = {
    claims: (req) => req.headers[HEADER] !== undefined,
    handle(req, res) {
      const t = verify(req);
      if (!t) return plain(res, 403, 'forbidden', 'This request did not come through the proxy.');
      const release = admit();
      if (!release) return plain(res, 503, 'service_unavailable', BUSY, { 'retry-after': '5' });
      res.once('close', release);
      void woken(t)
        .then((state) => {
          if (state === 'up') return forward(req, res, t);
          return plain(res, 503, 'service_unavailable', waitAnswer(state), { 'retry-after': '5' });
        })
        .catch((err) => {
          env.log.error({ err }, 'wake path failed');
          plain(res, 500, 'internal_error', 'Internal error');
        });
    },
    handleUpgrade(req, socket, head) {
      // node:http leaves an upgraded socket without an error listener: one is needed at once.
      socket.on('error', () => socket.destroy());
      const t = verify(req);
      if (!t) return answerRaw(socket, 403, 'forbidden', 'This request did not come through the proxy.');
      const release = admit();
      if (!release) return answerRaw(socket, 503, 'service_unavailable', BUSY, { 'Retry-After': '5' });
      held.add(socket);
      socket.once('close', () => {
        held.delete(socket);
        release();
      });
      void woken(t)
        .then((state) => {
          if (socket.destroyed) return;
          if (state === 'up') return connect(req, socket, head, t);
          answerRaw(socket, 503, 'service_unavailable', waitAnswer(state), { 'Retry-After': '5' });
        })
        .catch((err) => {
          env.log.error({ err }, 'wake path failed');
          answerRaw(socket, 500, 'internal_error', 'Internal error');
        });
    },
    close() {
      for (const s of held) s.destroy();
    },
  };

  /**
   * The held upgrade, sent to the container as the plain path sends a request (same address, same
   * headers but the wake header), with the hop's Connection/Upgrade kept: that is what asks for it.
   * A 101 is relayed as the app wrote it and the sockets are piped; any other answer is relayed and
   * the socket closed, as a refused handshake would be.
   */
  const connect = async (req: IncomingMessage, socket: Duplex, head: Buffer, t: WakeTarget) => {
    const dial = await dialOf(t);
    if (socket.destroyed) return;
    if (!dial) return answerRaw(socket, 503, 'service_unavailable', NO_CONTAINER, { 'Retry-After': '5' });
    const headers: IncomingHttpHeaders = {};
    for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && v !== undefined) headers[k] = v;
    headers.connection = 'Upgrade';
    headers.upgrade = req.headers.upgrade;
    const [host, port] = dial;
    const out = httpRequest({ host, port, method: req.method, path: req.url, headers, agent: false });
    const dropped = () => out.destroy();
    socket.once('close', dropped);
    let answered = false;
    out.on('upgrade', (answer, app, appHead) => {
      answered = true;
      socket.off('close', dropped);
      app.on('error', () => app.destroy());
      // Either side ending ends both: no half of a tunnel is left open.
      app.once('close', () => socket.destroy());
      socket.once('close', () => app.destroy());
      if (socket.destroyed) return void app.destroy();
      held.add(app);
      app.once('close', () => held.delete(app));
      closeWhenIdle(socket, app, env.config.wakeIdleSeconds * 1000);
      socket.write(statusLine(answer) + rawHeaderLines(answer.rawHeaders, () => true) + '\r\n');
      if (appHead.length) socket.write(appHead);
      if (head.length) app.write(head);
      app.pipe(socket);
      socket.pipe(app);
    });
    out.on('response', (answer) => {
      answered = true;
      socket.write(
        statusLine(answer) +
          rawHeaderLines(answer.rawHeaders, (k) => !HOP.has(k)) +
          'Connection: close\r\n\r\n',
      );
      answer.pipe(socket);
      answer.on('error', () => socket.destroy());
    });
    out.on('error', () =>
      answered
        ? socket.destroy()
        : answerRaw(socket, 502, 'internal_error', 'The app did not answer after waking.'),
    );
    out.end();
  };

  return path;
}

/** Closes both ends of a tunnel once neither carried a byte for `ms`. */
function closeWhenIdle(a: Duplex, b: Duplex, ms: number): void {
  const timer = setTimeout(() => {
    a.destroy();
    b.destroy();
  }, ms);
  timer.unref();
  const touch = () => timer.refresh();
  a.on('data', touch);
  b.on('data', touch);
  const stop = () => clearTimeout(timer);
  a.once('close', stop);
  b.once('close', stop);
}

/** An HTTP answer written on a socket that node:http no longer manages, then the socket closed. */
function answerRaw(
  socket: Duplex,
  status: number,
  code: string,
  error: string,
  headers: Record<string, string> = {},
): void {
  if (socket.destroyed || !socket.writable) return void socket.destroy();
  const body = `${JSON.stringify({ error, code })}\n`;
  const lines = Object.entries({
    'Content-Type': 'application/json',
    'Cache-Control': 'no-store',
    ...headers,
    'Content-Length': String(Buffer.byteLength(body)),
    Connection: 'close',
  }).map(([k, v]) => `${k}: ${v}\r\n`);
  socket.end(`HTTP/1.1 ${status} ${STATUS_CODES[status] ?? ''}\r\n${lines.join('')}\r\n${body}`);
}

function statusLine(answer: IncomingMessage): string {
  const code = answer.statusCode ?? 502;
  return `HTTP/1.1 ${code} ${answer.statusMessage || STATUS_CODES[code] || ''}\r\n`;
}

function rawHeaderLines(raw: string[], keep: (lowerName: string) => boolean): string {
  let out = '';
  for (let i = 0; i + 1 < raw.length; i += 2)
    if (keep(raw[i]!.toLowerCase())) out += `${raw[i]}: ${raw[i + 1]}\r\n`;
  return out;
}

function splitDial(dial: string): [string, number] {
  const i = dial.lastIndexOf(':');
  return [dial.slice(0, i).replace(/^\[|\]$/g, ''), Number(dial.slice(i + 1))];
}
