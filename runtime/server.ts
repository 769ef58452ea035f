// The server: node:http with the request listener of runtime/node-listener.ts; the WebSocket
// upgrade shares it. Shutdown stops accepting, lets in-flight requests finish,
// then closes sockets and the database.
import {
  createServer as createHttpServer,
  type Server,
  type IncomingMessage,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { Services } from '#lib/http/handler.js';
import { createDispatcher, type Dispatcher } from './dispatcher.js';
import { nodeListener } from './node-listener.js';
import type { WsHub } from './ws.js';
import { routes } from './routes.gen.js';
import { loadDashboard } from './dashboard.js';
import { createWakePath } from './wake.js';
import { registerWsMetrics } from '#lib/metrics/platform.js';
import {
  engineSubnetGuard,
  followNetworks,
  refusesForwarded,
  type SubnetGuard,
} from '#lib/net/engine-subnets.js';
import { buildBlockList } from '#lib/http/client-address.js';

export interface Running {
  server: Server;
  app: Dispatcher;
  ws: WsHub;
  /** Closes connections from networks the engine manages (app containers) before reading them. */
  subnets: SubnetGuard;
  url: string;
  port: number;
  /** Extra work to stop before the database closes (followers, tailers, queues). */
  onClose(fn: () => Promise<void> | void): void;
  close(): Promise<void>;
}

const DRAIN_MS = 10_000;
/** How long boot waits for the engine's network list before listening without it. */
const SUBNETS_AT_BOOT_MS = 5_000;
const APP_NETWORK_REFUSAL = `${JSON.stringify({ error: 'The control domain does not answer clients on app networks.', code: 'forbidden' })}\n`;

/** `dashboardDir`: where the built dashboard is (default dist/dashboard); without one, `/` is a 404. */
export async function startServer(
  env: Services,
  opts: { port?: number; host?: string; dashboardDir?: string } = {},
): Promise<Running> {
  // Asked first, so the engine answers while the rest is set up; awaited before listening.
  const subnets = engineSubnetGuard(env.engine);
  const subnetsRead = subnets
    .refresh()
    .catch((err) =>
      env.log.debug(
        { err: String(err) },
        "could not read the engine's networks at boot; connections from app networks are refused once it answers",
      ),
    );
  const app = createDispatcher(env, routes, { dashboard: loadDashboard(opts.dashboardDir) });
  // Requests for sleeping apps never reach the API's routes (runtime/wake.ts).
  const wake = createWakePath(env);
  // Through the proxy from an app network (the control route): refused like a direct connection.
  const trusted = buildBlockList(env.config.trustedProxies);
  const fromAppNetwork = (req: IncomingMessage) =>
    refusesForwarded(subnets, trusted, req.socket.remoteAddress, req.headers['x-forwarded-for']);
  const listener = nodeListener(env, app, {
    claims: (req) => wake.claims(req) || fromAppNetwork(req),
    handle: (req, res) => {
      if (wake.claims(req)) return wake.handle(req, res);
      res.writeHead(403, { 'content-type': 'application/json' });
      res.end(APP_NETWORK_REFUSAL);
    },
  });
  const tls = env.config.tlsCert !== null;
  const server = httpServer(env, tls, listener);
  const ws = lazyWsHub(env);
  registerWsMetrics(env.metrics, ws);
  server.on('upgrade', (req, socket, head) => {
    if (wake.claims(req)) return wake.handleUpgrade(req, socket, head);
    if (!fromAppNetwork(req)) return ws.handleUpgrade(req, socket, head, tls);
    socket.on('error', () => socket.destroy());
    socket.end(
      `HTTP/1.1 403 Forbidden\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(APP_NETWORK_REFUSAL)}\r\nConnection: close\r\n\r\n${APP_NETWORK_REFUSAL}`,
    );
  });
  guardConnections(env, server, subnets);
  // (Logged at debug: "listening" stays the first line; an engine that is away is reported by what needs it.)
  await within(subnetsRead, SUBNETS_AT_BOOT_MS);

  const host = opts.host ?? env.config.host;
  const port = await listen(server, opts.port ?? env.config.port, host);
  const following = new AbortController();
  void followNetworks(env.engine, subnets, following.signal, (err) =>
    env.log.debug({ err: String(err) }, 'engine network events interrupted; reconnecting'),
  );
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const url = `${tls ? 'https' : 'http'}://${shownHost}:${port}`;

  const closers: Array<() => Promise<void> | void> = [];
  let closing: Promise<void> | null = null;
  const close = () =>
    (closing ??= (async () => {
      const drained = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      const timer = setTimeout(() => server.closeAllConnections(), DRAIN_MS);
      following.abort();
      wake.close();
      await ws.close();
      await drained;
      clearTimeout(timer);
      await runClosers(env, closers.reverse());
      await listener.close();
      await env.db.destroy();
    })());

  return { server, app, ws, subnets, url, port, onClose: (fn) => closers.push(fn), close };
}

function httpServer(
  env: Services,
  tls: boolean,
  listener: (req: IncomingMessage, res: ServerResponse) => void,
): Server {
  const server: Server = tls
    ? createHttpsServer(
        { cert: readFileSync(env.config.tlsCert!), key: readFileSync(env.config.tlsKey!) },
        listener,
      )
    : createHttpServer(listener);
  server.headersTimeout = 20_000;
  server.requestTimeout = 120_000;
  server.keepAliveTimeout = 5_000;
  return server;
}

/** Connections from networks the engine manages are closed before anything is read, and counted. */
function guardConnections(env: Services, server: Server, subnets: SubnetGuard): void {
  // Before any other listener (TLS's included): such a connection is closed with nothing read.
  server.prependListener('connection', (socket) => {
    if (!subnets.refuses(socket.remoteAddress)) return;
    subnets.count();
    socket.destroy();
  });
  env.metrics.add({
    name: 'svc_http_connections_refused_total',
    help: 'Connections closed unread because they came from a network the Docker engine manages',
    type: 'counter',
    values: () => [{ value: subnets.refused() }],
  });
}

/** Waits for `p`, or `ms` at most. */
async function within(p: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([p, new Promise<void>((r) => (timer = setTimeout(r, ms)))]);
  clearTimeout(timer);
}

/** Listens; answers the port (the one asked for, or the one the system chose for 0). */
async function listen(server: Server, port: number, host: string): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return (server.address() as AddressInfo).port;
}

async function runClosers(env: Services, closers: Array<() => Promise<void> | void>): Promise<void> {
  for (const fn of closers) {
    try {
      await fn();
    } catch (err) {
      env.log.error({ err }, 'shutdown step failed');
    }
  }
}

/**
 * The WebSocket hub (runtime/ws.ts, `ws` and the shell's modules) is loaded by the first upgrade:
 * an instance nobody has opened the dashboard of does not hold it in memory. Until then there is
 * no client, subscription or heartbeat to report or stop.
 */
function lazyWsHub(env: Services): WsHub {
  let hub: Promise<WsHub> | null = null;
  let closed = false;
  let loaded: WsHub | null = null;
  return {
    handleUpgrade(req, socket, head, tls) {
      // An error while the module loads must not be an unhandled 'error' event; the hub adds its own.
      const onError = () => socket.destroy();
      socket.on('error', onError);
      hub ??= import('./ws.js').then(({ createWsHub }) => (loaded = createWsHub(env)));
      hub.then(
        (h) => {
          socket.off('error', onError);
          if (closed) socket.destroy();
          else h.handleUpgrade(req, socket, head, tls);
        },
        (err) => {
          env.log.error({ err }, 'the websocket hub could not be loaded');
          socket.destroy();
        },
      );
    },
    async close() {
      closed = true;
      if (hub) await (await hub.catch(() => null))?.close();
    },
    clientCount: () => loaded?.clientCount() ?? 0,
    topicCounts: () => loaded?.topicCounts() ?? new Map(),
  };
}
