// The WebSocket hub on the same server: every upgrade runs the upgrade's stages (runtime/upgrade.ts:
// the request's own authentication and policy, so an unauthenticated client gets a plain HTTP 401
// and never a socket), then the route's acceptor: the API's event socket (runtime/ws-subscribe.ts)
// or a container shell (lib/shell). Every socket is re-checked when credentials change
// (runtime/ws-credentials.ts).
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Principal, Services } from '#lib/http/handler.js';
import { allows } from '#lib/auth/access.js';
import { prepareShell, runShell, SHELL_MAX_FRAME, type ShellSocket } from '#lib/shell/session.js';
import { routes as routeTable } from './routes.gen.js';
import type { RouteDef } from './route-types.js';
import { createSite } from './dispatcher.js';
import type { Exchange } from './pipeline.js';
import { allowedOrigin, upgrade, type Acceptor } from './upgrade.js';
import { watchCredentials, type CredentialWatch, type Credential } from './ws-credentials.js';
import { subscriptions, type Subscriptions } from './ws-subscribe.js';

export { allowedOrigin } from './upgrade.js';

export interface WsHub {
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer, tls: boolean): void;
  close(): Promise<void>;
  clientCount(): number;
  /** Subscriptions by topic kind (`logs:<id>` counts as `logs`), for /metrics. */
  topicCounts(): Map<string, number>;
}

const API_PATTERN = '/api/ws';
const SHELL_PATTERN = '/api/apps/:id/services/:name/shell';
const HEARTBEAT_MS = 30_000;

export function createWsHub(env: Services, routes: RouteDef[] = routeTable): WsHub {
  const api = new WebSocketServer({ noServer: true, maxPayload: 64 * 1024 });
  // The container shell's sockets: same limits on frames, their own lifecycle (lib/shell).
  const shells = new WebSocketServer({ noServer: true, maxPayload: SHELL_MAX_FRAME });
  const watch = watchCredentials(env);
  const subscribed = new Map<WebSocket, Subscriptions>();
  const heartbeat = keepAlive(api);
  const accept = new Map<string, Acceptor>([
    [API_PATTERN, apiAcceptor(env, api, watch, subscribed, heartbeat.track)],
    [SHELL_PATTERN, shellAcceptor(env, shells, watch)],
  ]);
  // The shell is no route at all unless SVC_ENABLE_SHELL is on (read at each upgrade).
  const acceptor = (pattern: string) =>
    pattern === SHELL_PATTERN && !env.config.enableShell ? undefined : accept.get(pattern);
  const site = { ...createSite(env, routes), upgrades: { acceptor, originOk: allowedOrigin(env.config) } };

  return {
    handleUpgrade: (req, socket, head, tls) => upgrade(site, req, socket, head, tls),
    async close() {
      heartbeat.stop();
      watch.close();
      for (const server of [api, shells])
        for (const ws of server.clients) ws.close(1001, 'server shutting down');
      await new Promise<void>((r) => api.close(() => r()));
      await new Promise<void>((r) => shells.close(() => r()));
      for (const server of [api, shells]) for (const ws of server.clients) ws.terminate();
    },
    clientCount: () => api.clients.size,
    topicCounts() {
      const out = new Map<string, number>();
      for (const subs of subscribed.values()) {
        for (const topic of subs.topics()) {
          const kind = topic.split(':')[0]!;
          out.set(kind, (out.get(kind) ?? 0) + 1);
        }
      }
      return out;
    },
  };
}

/** What the request authenticated with, kept to check the socket again when credentials change. */
function credentialOf(x: Exchange): Credential {
  return { authorization: x.headers.get('authorization'), cookie: x.headers.get('cookie') };
}

/** `GET /api/ws`: the event socket. */
function apiAcceptor(
  env: Services,
  server: WebSocketServer,
  watch: CredentialWatch,
  subscribed: Map<WebSocket, Subscriptions>,
  track: (ws: WebSocket) => void,
): Acceptor {
  return (x, req, socket, head) => {
    const principal = x.principal!;
    const credential = credentialOf(x);
    server.handleUpgrade(req, socket, head, (ws) => {
      track(ws);
      const subs = subscriptions(env, ws, principal);
      subscribed.set(ws, subs);
      watch.add(ws, {
        userId: principal.user.id,
        credential,
        end: (reason) => ws.close(1008, reason),
        narrowed: subs.narrowed,
      });
      ws.on('close', () => {
        watch.remove(ws);
        subscribed.delete(ws);
        subs.close();
      });
      ws.on('error', () => ws.terminate());
      env.log.debug({ user: principal.user.username, via: principal.kind }, 'websocket connected');
    });
  };
}

/** A service's container shell (SVC_ENABLE_SHELL): the target is found before the upgrade, so a refusal is HTTP. */
function shellAcceptor(env: Services, server: WebSocketServer, watch: CredentialWatch): Acceptor {
  return async (x, req, socket, head) => {
    const principal = x.principal!;
    const appId = x.rawParams.id!;
    const target = await prepareShell(env, principal, appId, x.rawParams.name!);
    const credential = credentialOf(x);
    const ip = x.client.ip;
    server.handleUpgrade(req, socket, head, (ws) => {
      ws.on('error', () => ws.terminate());
      const shell = runShell(env, principal, ip, target, ws as unknown as ShellSocket);
      // Revoking the token, logging out or deleting the session ends the shell like an API socket.
      const end = (reason: string) => shell.close(1008, reason);
      // A shell is closed, not narrowed: it needs app.shell on its app for as long as it is open.
      const narrowed = (p: Principal) => {
        if (!allows(p, 'app.shell', appId)) end('access withdrawn');
      };
      watch.add(ws, { userId: principal.user.id, credential, end, narrowed });
      ws.on('close', () => watch.remove(ws));
    });
  };
}

/** Pings every API socket; one that did not answer the last ping is cut off. */
function keepAlive(server: WebSocketServer): { track(ws: WebSocket): void; stop(): void } {
  const alive = new WeakSet<WebSocket>();
  const timer = setInterval(() => {
    for (const ws of server.clients) {
      if (!alive.has(ws)) {
        ws.terminate();
        continue;
      }
      alive.delete(ws);
      ws.ping();
    }
  }, HEARTBEAT_MS);
  timer.unref();
  return {
    track(ws) {
      alive.add(ws);
      ws.on('pong', () => alive.add(ws));
    },
    stop: () => clearInterval(timer),
  };
}
