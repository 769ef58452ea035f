// The Node adapter: @whatwg-node/server turns node:http into Fetch calls; the WebSocket
// upgrade shares the same server. Shutdown stops accepting, lets in-flight requests finish,
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
import type { TLSSocket } from 'node:tls';
import { createServerAdapter, sendNodeResponse } from '@whatwg-node/server';
import type { Services as Env } from '#lib/http/handler.js';
import { createDispatcher, type Dispatcher, type RequestMeta } from './dispatcher.js';
import { BodylessRequest, sendDirect } from './node-http.js';
import type { WsHub } from './ws.js';
import { routes } from './routes.gen.js';
import { loadDashboard } from './dashboard.js';
import { isPromise } from '#lib/util/maybe.js';
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
const APP_NETWORK_REFUSAL = `${JSON.stringify({ error: 'The control domain does not answer clients on app networks.', code: 'forbidden' })}\n`;
/** How long boot waits for the engine's network list before listening without it. */
const SUBNETS_AT_BOOT_MS = 5_000;

/** `dashboardDir`: where the built dashboard is (default dist/dashboard); without one, `/` is a 404. */
export async function startServer(
  env: Env,
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
  const wake = createWakePath(env);
  const trusted = buildBlockList(env.config.trustedProxies);
  const fromAppNetwork = (req: IncomingMessage) =>
    refusesForwarded(subnets, trusted, req.socket.remoteAddress, req.headers['x-forwarded-for']);
  const metaOf = (req: IncomingMessage): RequestMeta => ({
    peer: req.socket.remoteAddress,
    target: req.url,
    rawHeaders: req.headers,
    tls: (req.socket as TLSSocket).encrypted === true,
    waitUntil,
  });
  // Requests with a body: the adapter turns node:http's stream into the Request's body.
  const adapter = createServerAdapter<{ req: IncomingMessage; res: ServerResponse }>(
    (request, ctx) => app.fetch(request, metaOf(ctx.req)),
    // The adapter's own abort signal, which it picks anyway because its Request is not Node's;
    // said here so that it does not read Node's global Request to find out, which loads undici.
    { __useCustomAbortCtrl: true },
  );
  // The adapter waits for these before it is disposed at shutdown.
  const waitUntil = (p: Promise<unknown>) => adapter.waitUntil(p.then(() => undefined));
  const failed = (res: ServerResponse, err: unknown) => {
    env.log.error({ err }, 'response could not be sent');
    if (!res.headersSent) res.writeHead(500);
    res.end();
  };
  const send = (req: IncomingMessage, res: ServerResponse, response: Response) => {
    try {
      if (sendDirect(response, res)) return;
      const sent = sendNodeResponse(response, res, req, true);
      if (isPromise(sent)) sent.then(undefined, (err) => failed(res, err));
    } catch (err) {
      failed(res, err);
    }
  };
  // Like the adapter's own listener, but synchronous end to end when the app answers
  // synchronously (a health check, a cached credential): no promise is made for such a request.
  const listener = (req: IncomingMessage, res: ServerResponse) => {
    // Requests for sleeping apps never reach the API's routes (runtime/wake.ts).
    if (wake.claims(req)) return wake.handle(req, res);
    // Through the proxy from an app network (the control route): refused like a direct connection.
    if (fromAppNetwork(req)) {
      res.writeHead(403, { 'content-type': 'application/json' });
      return void res.end(APP_NETWORK_REFUSAL);
    }
    let response: Response | Promise<Response>;
    try {
      const method = req.method;
      response =
        method === 'GET' || method === 'HEAD'
          ? app.fetch(new BodylessRequest(req, res), metaOf(req))
          : adapter.handleNodeRequestAndResponse(req, res, { req, res, waitUntil: adapter.waitUntil });
    } catch (err) {
      failed(res, err);
      return;
    }
    if (isPromise(response))
      response.then(
        (r) => send(req, res, r),
        (err) => failed(res, err),
      );
    else send(req, res, response);
  };
  const tls = env.config.tlsCert !== null;
  const server: Server = tls
    ? createHttpsServer(
        { cert: readFileSync(env.config.tlsCert!), key: readFileSync(env.config.tlsKey!) },
        listener,
      )
    : createHttpServer(listener);
  server.headersTimeout = 20_000;
  server.requestTimeout = 120_000;
  server.keepAliveTimeout = 5_000;
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
  const closers: Array<() => Promise<void> | void> = [];

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
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    // (Logged at debug: "listening" stays the first line; an engine that is away is reported by what needs it.)
    subnetsRead,
    new Promise<void>((r) => (timer = setTimeout(r, SUBNETS_AT_BOOT_MS))),
  ]);
  clearTimeout(timer);

  const host = opts.host ?? env.config.host;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? env.config.port, host, () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const following = new AbortController();
  void followNetworks(env.engine, subnets, following.signal, (err) =>
    env.log.debug({ err: String(err) }, 'engine network events interrupted; reconnecting'),
  );
  const shownHost = host.includes(':') ? `[${host}]` : host === '0.0.0.0' ? '127.0.0.1' : host;
  const url = `${tls ? 'https' : 'http'}://${shownHost}:${port}`;

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
      for (const fn of closers.reverse()) {
        try {
          await fn();
        } catch (err) {
          env.log.error({ err }, 'shutdown step failed');
        }
      }
      await adapter.dispose?.();
      await env.db.destroy();
    })());

  return { server, app, ws, subnets, url, port, onClose: (fn) => closers.push(fn), close };
}

/**
 * The WebSocket hub (runtime/ws.ts, `ws` and the shell's modules) is loaded by the first upgrade:
 * an instance nobody has opened the dashboard of does not hold it in memory. Until then there is
 * no client, subscription or heartbeat to report or stop.
 */
function lazyWsHub(env: Env): WsHub {
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
