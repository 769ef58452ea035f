// WebSocket upgrade on the same server: authenticated before handleUpgrade, so an
// unauthenticated client gets a plain HTTP 401 and never a socket.
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, WebSocket } from 'ws';
import type { Services as Env } from '#lib/http/handler.js';
import { isIP } from 'node:net';
import { authenticate } from '#lib/auth/principal.js';
import { onCredentialsChanged } from '#lib/auth/cache.js';
import { isPromise, type Maybe } from '#lib/util/maybe.js';
import { missingTopicResource } from '#lib/events/topics.js';
import { HttpError } from '#lib/http/errors.js';
import { isValidTopic, type BusEvent } from '#lib/events/bus.js';
import { buildBlockList, clientAddress, forwardedSecure } from '#lib/http/client-address.js';
import { prepareShell, runShell, SHELL_MAX_FRAME, SHELL_PATH, type ShellSocket } from '#lib/shell/session.js';
import { GET as shellRoute } from '../handlers/api/apps/[id]/services/[name]/shell.js';
import { GET as wsRoute } from '../handlers/api/ws.js';
import { authorise as authoriseRoute, reach } from './dispatcher.js';
import { allows } from '#lib/auth/access.js';
import { authoriseTopic, eventVisible, grantHolds, type TopicGrant } from '#lib/auth/topics.js';
import type { Principal } from '#lib/http/handler.js';
import { headerGetter } from '#lib/http/headers.js';

const MAX_TOPICS = 64;
// A subscriber that stops reading must not make us buffer without bound.
const MAX_BUFFERED = 4 * 1024 * 1024;
// A replay (a whole build log: 100,000 lines is ~15 MB of frames) is paced to the socket: above
// this much unsent, the next replayed frame waits until the last one is written out, so a long
// history never trips MAX_BUFFERED, which would close the socket, and the client's resubscribe
// would start the same replay over again.
const REPLAY_HIGH_WATER = 512 * 1024;

export interface WsHub {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, tls: boolean): void;
  close(): Promise<void>;
  clientCount(): number;
  /** Subscriptions by topic kind (`logs:<id>` counts as `logs`), for /metrics. */
  topicCounts(): Map<string, number>;
}

function refuse(socket: Duplex, status: number, message: string, code?: string): void {
  const body = JSON.stringify({
    error: message,
    code:
      code ??
      (status === 401
        ? 'unauthorized'
        : status === 404
          ? 'not_found'
          : status === 409
            ? 'conflict'
            : status === 503
              ? 'service_unavailable'
              : 'forbidden'),
  });
  const reason =
    status === 401
      ? 'Unauthorized'
      : status === 404
        ? 'Not Found'
        : status === 409
          ? 'Conflict'
          : status === 503
            ? 'Service Unavailable'
            : 'Forbidden';
  socket.end(
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
}

/**
 * The origins a cookie-authenticated upgrade may come from. With SVC_PUBLIC_URL or a control
 * domain configured, those; the plain-HTTP fallback (`http://<ip>:9393`) stays usable because a
 * Host that is an IP literal cannot be a rebinding attacker's name. Without configuration, the
 * origin the request's own Host names. Cookies are never sent to another site's name, so an
 * Origin that matches the Host it was sent to is our own page.
 */
export function allowedOrigin(
  config: Pick<Env['config'], 'publicUrl' | 'controlDomain'>,
): (origin: string | null, host: string | null, secure: boolean) => boolean {
  const configured = new Set<string>();
  if (config.publicUrl) configured.add(new URL(config.publicUrl).origin);
  if (config.controlDomain) configured.add(`https://${config.controlDomain}`);
  return (origin, host, secure) => {
    if (!origin || !host) return false;
    const o = origin.toLowerCase();
    if (configured.has(o)) return true;
    const own = `${secure ? 'https' : 'http'}://${host.toLowerCase()}`;
    if (o !== own) return false;
    if (configured.size === 0) return true;
    const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d+$/, '');
    return isIP(name) !== 0;
  };
}

/** What a connection authenticated with, to check it again when credentials change. */
interface Credential {
  authorization: string | null;
  cookie: string | null;
}

const SHELL_PATTERN = '/api/apps/:id/services/:name/shell';

/** What a missing topic resource is called: an unreachable one is named the same way. */
function absent(topic: string): string {
  const at = topic.indexOf(':');
  if (topic.startsWith('build:')) return `no deployment with id "${topic.slice(at + 1)}"`;
  if (topic.startsWith('run:')) return `no run with id "${topic.slice(at + 1)}"`;
  return `no app with id "${topic.slice(at + 1)}"`;
}

export function createWsHub(env: Env): WsHub {
  const wss = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  // The container shell's sockets: same limits on frames, their own lifecycle (lib/shell).
  const shells = new WebSocketServer({ noServer: true, maxPayload: SHELL_MAX_FRAME });
  const trusted = buildBlockList(env.config.trustedProxies);
  const originOk = allowedOrigin(env.config);
  const alive = new WeakSet<WebSocket>();
  // Every socket that acted for a credential, API and shell alike, with how to end it when that credential goes.
  // `narrowed`: the credential still stands but may allow less (a role or app list changed): the socket re-checks.
  const owners = new Map<
    WebSocket,
    {
      userId: string;
      credential: Credential;
      end: (reason: string) => void;
      narrowed?: (p: Principal) => void;
    }
  >();
  const subscriptions = new Map<WebSocket, Map<string, () => void>>();

  // A revocation, logout, deleted operator or new password closes what it no longer allows.
  // Coalesced: one pass over the open sockets per burst of changes.
  let recheckQueued = false;
  const recheck = () => {
    recheckQueued = false;
    for (const [ws, o] of owners) {
      const verdict = (still: Principal | null) => {
        if (!still || still.user.id !== o.userId) {
          owners.delete(ws);
          o.end('credentials revoked');
          // A peer that ignores the close handshake is cut off anyway.
          setTimeout(() => ws.terminate(), 1000).unref();
          return;
        }
        o.narrowed?.(still);
      };
      // In place on SQLite; a promise per socket on PostgreSQL.
      let still: Maybe<Principal | null>;
      try {
        still = authenticate(env, {
          get: (name: string) =>
            name === 'authorization'
              ? o.credential.authorization
              : name === 'cookie'
                ? o.credential.cookie
                : null,
        });
      } catch {
        still = null;
      }
      if (isPromise(still)) still.then(verdict, () => verdict(null));
      else verdict(still);
    }
  };
  const offCredentials = onCredentialsChanged(() => {
    if (recheckQueued || owners.size === 0) return;
    recheckQueued = true;
    setImmediate(recheck);
  });
  const heartbeat = setInterval(() => {
    for (const ws of wss.clients) {
      if (!alive.has(ws)) {
        ws.terminate();
        continue;
      }
      alive.delete(ws);
      ws.ping();
    }
  }, 30_000);
  heartbeat.unref();

  async function authorise(req: IncomingMessage, tls: boolean): Promise<Principal | null> {
    const headers = headerGetter(req.headers);
    const principal = await authenticate(env, headers);
    if (!principal) return null;
    if (principal.kind === 'session') {
      // Cookies ride along on cross-site WebSocket handshakes; only our own pages may use them.
      const secure =
        tls || forwardedSecure(req.socket.remoteAddress, headers.get('x-forwarded-proto'), trusted);
      if (!originOk(headers.get('origin'), headers.get('host'), secure)) return null;
    }
    return principal;
  }

  function attach(ws: WebSocket, principal: Principal, credential: Credential): void {
    const subs = new Map<string, () => void>();
    const grants = new Map<string, TopicGrant>();
    // The access this socket acts with now: replaced when a credential change narrows it.
    let current = principal;
    subscriptions.set(ws, subs);
    const narrowed = (p: Principal) => {
      current = p;
      for (const [topic, grant] of grants) {
        if (grantHolds(p, grant)) continue;
        grants.delete(topic);
        subs.get(topic)?.();
        subs.delete(topic);
        send({ type: 'error', code: 'forbidden', error: `access to ${topic} was withdrawn`, topic });
      }
    };
    owners.set(ws, {
      userId: principal.user.id,
      credential,
      end: (reason) => ws.close(1008, reason),
      narrowed,
    });
    alive.add(ws);
    ws.on('pong', () => alive.add(ws));
    const send = (msg: unknown) => {
      if (ws.readyState !== WebSocket.OPEN) return;
      if (ws.bufferedAmount > MAX_BUFFERED) {
        ws.close(1013, 'subscriber too slow');
        return;
      }
      ws.send(JSON.stringify(msg));
    };
    const sendError = (code: string, error: string) => send({ type: 'error', code, error });
    ws.on('message', async (raw, isBinary) => {
      if (isBinary) return sendError('bad_request', 'messages must be JSON text');
      let msg: { type?: unknown; topic?: unknown };
      try {
        msg = JSON.parse(raw.toString('utf8'));
      } catch {
        return sendError('bad_request', 'message is not valid JSON');
      }
      if (msg === null || typeof msg !== 'object')
        return sendError('bad_request', 'message must be an object');
      const { type, topic } = msg;
      if (type !== 'subscribe' && type !== 'unsubscribe')
        return sendError('bad_request', 'type must be "subscribe" or "unsubscribe"');
      if (!isValidTopic(topic)) return sendError('bad_request', 'unknown topic');
      if (type === 'unsubscribe') {
        subs.get(topic)?.();
        subs.delete(topic);
        grants.delete(topic);
        return send({ type: 'unsubscribed', topic });
      }
      if (subs.has(topic)) return send({ type: 'subscribed', topic });
      if (subs.size >= MAX_TOPICS)
        return sendError('bad_request', `at most ${MAX_TOPICS} topics per connection`);
      subs.set(topic, () => {});
      let grant: TopicGrant;
      try {
        grant = await authoriseTopic(env.db, current, topic);
      } catch (err) {
        subs.delete(topic);
        if (!(err instanceof HttpError))
          return send({
            type: 'error',
            code: 'internal_error',
            error: `cannot subscribe to ${topic}`,
            topic,
          });
        // Another app's topic answers as a missing one would: its existence is not revealed.
        const error =
          err.code === 'not_found'
            ? `cannot subscribe to ${topic}: ${absent(topic)}`
            : `cannot subscribe to ${topic}: ${err.message}`;
        return send({ type: 'error', code: err.code, error, topic });
      }
      const missing = await missingTopicResource(env.db, topic).catch(() => null);
      if (missing !== null) {
        subs.delete(topic);
        return send({
          type: 'error',
          code: 'not_found',
          error: `cannot subscribe to ${topic}: ${missing}`,
          topic,
        });
      }
      if (!subs.has(topic) || ws.readyState !== WebSocket.OPEN) return;
      const off = await env.bus.subscribe(topic, (e: BusEvent) => {
        if (!eventVisible(current, e.data)) return;
        const frame = { type: 'event', topic: e.topic, ts: e.ts, data: e.data };
        if (
          ws.readyState !== WebSocket.OPEN ||
          ws.bufferedAmount <= REPLAY_HIGH_WATER ||
          ws.bufferedAmount > MAX_BUFFERED
        )
          return send(frame);
        // Only the replay awaits this; live events are sent at once (and bounded by send()).
        return new Promise<void>((resolve) => ws.send(JSON.stringify(frame), () => resolve()));
      });
      if (!subs.has(topic) || ws.readyState !== WebSocket.OPEN) {
        off();
        return;
      }
      if (!grantHolds(current, grant)) {
        // Access narrowed while the subscription was being made.
        off();
        subs.delete(topic);
        return send({ type: 'error', code: 'forbidden', error: `access to ${topic} was withdrawn`, topic });
      }
      subs.set(topic, off);
      grants.set(topic, grant);
      send({ type: 'subscribed', topic });
    });
    ws.on('close', () => {
      owners.delete(ws);
      subscriptions.delete(ws);
      for (const off of subs.values()) off();
      subs.clear();
    });
    ws.on('error', () => ws.terminate());
    env.log.debug({ user: principal.user.username, via: principal.kind }, 'websocket connected');
  }

  function upgradeShell(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    tls: boolean,
    m: RegExpExecArray,
  ): void {
    if (!env.config.enableShell) return refuse(socket, 404, 'No such route');
    let appId: string;
    let service: string;
    try {
      appId = decodeURIComponent(m[1]!);
      service = decodeURIComponent(m[2]!);
    } catch {
      return refuse(socket, 404, 'No such route');
    }
    authorise(req, tls)
      .then(async (principal) => {
        if (!principal) return refuse(socket, 401, 'Authentication required');
        // The route's own declaration (permission, app, step-up) decides, as the dispatcher would for any request.
        authoriseRoute(env, shellRoute.spec, principal, true);
        await reach(env, shellRoute.spec, SHELL_PATTERN, { id: appId, name: service }, principal, false);
        const target = await prepareShell(env, principal, appId, service);
        const headers = headerGetter(req.headers);
        const ip = clientAddress(req.socket.remoteAddress, headers.get('x-forwarded-for'), trusted);
        const credential = { authorization: headers.get('authorization'), cookie: headers.get('cookie') };
        shells.handleUpgrade(req, socket, head, (ws) => {
          ws.on('error', () => ws.terminate());
          const shell = runShell(env, principal, ip, target, ws as unknown as ShellSocket);
          // Revoking the token, logging out or deleting the session ends the shell like an API socket.
          const end = (reason: string) => shell.close(1008, reason);
          // A shell is closed, not narrowed: it needs app.shell on its app for as long as it is open.
          const narrowed = (p: Principal) => {
            if (!allows(p, 'app.shell', appId)) end('access withdrawn');
          };
          owners.set(ws, { userId: principal.user.id, credential, end, narrowed });
          ws.on('close', () => owners.delete(ws));
        });
      })
      .catch((err) => {
        if (err instanceof HttpError) return refuse(socket, err.status, err.message, err.code);
        env.log.error({ err }, 'shell upgrade failed');
        refuse(socket, 503, 'The shell could not be opened');
      });
  }

  return {
    handleUpgrade(req, socket, head, tls) {
      socket.on('error', () => socket.destroy());
      const path = (req.url ?? '').split('?')[0]!;
      const shell = SHELL_PATH.exec(path);
      if (shell) return upgradeShell(req, socket, head, tls, shell);
      if (path !== '/api/ws') return refuse(socket, 404, 'No such route');
      authorise(req, tls).then(
        (principal) => {
          if (!principal) return refuse(socket, 401, 'Authentication required');
          try {
            authoriseRoute(env, wsRoute.spec, principal, true);
          } catch (err) {
            return refuse(socket, 403, err instanceof Error ? err.message : 'Forbidden');
          }
          const credential = {
            authorization: headerGetter(req.headers).get('authorization'),
            cookie: headerGetter(req.headers).get('cookie'),
          };
          wss.handleUpgrade(req, socket, head, (ws) => attach(ws, principal, credential));
        },
        (err) => {
          if (err instanceof HttpError) return refuse(socket, err.status === 401 ? 401 : 403, err.message);
          env.log.error({ err }, 'websocket authentication failed');
          refuse(socket, 401, 'Authentication required');
        },
      );
    },
    async close() {
      clearInterval(heartbeat);
      offCredentials();
      for (const ws of wss.clients) ws.close(1001, 'server shutting down');
      for (const ws of shells.clients) ws.close(1001, 'server shutting down');
      await new Promise<void>((r) => wss.close(() => r()));
      await new Promise<void>((r) => shells.close(() => r()));
      for (const ws of wss.clients) ws.terminate();
      for (const ws of shells.clients) ws.terminate();
    },
    clientCount: () => wss.clients.size,
    topicCounts() {
      const out = new Map<string, number>();
      for (const subs of subscriptions.values()) {
        for (const topic of subs.keys()) {
          const kind = topic.split(':')[0]!;
          out.set(kind, (out.get(kind) ?? 0) + 1);
        }
      }
      return out;
    },
  };
}
