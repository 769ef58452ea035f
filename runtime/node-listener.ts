// The node:http request listener. A GET or HEAD goes straight to the dispatcher and, answered with a
// PlainResponse, straight back (runtime/node-http.ts): synchronous end to end when the dispatcher
// is, no promise made. A request with a body goes through @whatwg-node/server, which turns
// node:http's stream into the Request's body; it is loaded by the first such request, so an idle
// server polled on its health check never holds it.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Services } from '#lib/http/handler.js';
import { PlainResponse } from '#lib/http/respond.js';
import { isPromise } from '#lib/util/maybe.js';
import type { Dispatcher, RequestMeta } from './dispatcher.js';
import { LazyRequest, sendDirect } from './node-http.js';

type ServerModule = typeof import('@whatwg-node/server');
type NodeContext = { req: IncomingMessage; res: ServerResponse };

export interface NodeListener {
  (req: IncomingMessage, res: ServerResponse): void;
  /** Waits for the work handlers handed to waitUntil, then lets the body adapter go. */
  close(): Promise<void>;
}

/** `claims`: a request another path answers (a sleeping app's, runtime/wake.ts). */
export function nodeListener(
  env: Pick<Services, 'log'>,
  app: Dispatcher,
  other: { claims(req: IncomingMessage): boolean; handle(req: IncomingMessage, res: ServerResponse): void },
): NodeListener {
  const pending = new Set<Promise<void>>();
  // Background work a handler started: a graceful shutdown waits for it.
  const waitUntil = (p: Promise<unknown>) => {
    const settled = p.then(
      () => undefined,
      () => undefined,
    );
    pending.add(settled);
    void settled.then(() => pending.delete(settled));
  };
  const metaOf = (req: IncomingMessage): RequestMeta => ({
    peer: req.socket.remoteAddress,
    target: req.url,
    rawHeaders: req.headers,
    tls: (req.socket as TLSSocket).encrypted === true,
    waitUntil,
  });
  const bodies = bodyAdapter((request, ctx) => app.fetch(request, metaOf(ctx.req)));
  const send = sender(env);

  const listener = (req: IncomingMessage, res: ServerResponse) => {
    if (other.claims(req)) return other.handle(req, res);
    const method = req.method;
    if (method !== 'GET' && method !== 'HEAD') {
      bodies
        .handle(req, res)
        .then((r) => send(req, res, r))
        .catch((err) => failed(env, res, err));
      return;
    }
    let response: Response | Promise<Response>;
    try {
      response = app.fetch(new LazyRequest(req, res), metaOf(req));
    } catch (err) {
      return failed(env, res, err);
    }
    if (!isPromise(response)) return send(req, res, response);
    response.then(
      (r) => send(req, res, r),
      (err) => failed(env, res, err),
    );
  };
  return Object.assign(listener, {
    async close() {
      await Promise.all(pending);
      await bodies.dispose();
    },
  });
}

let serverModule: Promise<ServerModule> | null = null;
const loadServerModule = () => (serverModule ??= import('@whatwg-node/server'));

/** @whatwg-node/server's adapter, made on first use. */
function bodyAdapter(fetch: (request: Request, ctx: NodeContext) => Response | Promise<Response>) {
  const create = ({ createServerAdapter }: ServerModule) =>
    createServerAdapter<NodeContext>(fetch, {
      // The adapter's own abort signal, which it picks anyway because its Request is not Node's;
      // said here so that it does not read Node's global Request to find out, which loads undici.
      __useCustomAbortCtrl: true,
    });
  let adapter: Promise<ReturnType<typeof create>> | null = null;
  const made = () => (adapter ??= loadServerModule().then(create));
  return {
    handle: (req: IncomingMessage, res: ServerResponse): Promise<Response> =>
      made().then((a) => a.handleNodeRequestAndResponse(req, res, { req, res })),
    async dispose() {
      if (adapter) await (await adapter).dispose?.();
    },
  };
}

/** Writes an answer: a PlainResponse directly, anything else through the adapter's writer. */
function sender(env: Pick<Services, 'log'>) {
  return (req: IncomingMessage, res: ServerResponse, response: Response): void => {
    try {
      if (sendDirect(response, res)) return;
    } catch (err) {
      return failed(env, res, err);
    }
    const whole = response instanceof PlainResponse ? response.real : response;
    loadServerModule()
      .then(({ sendNodeResponse }) => sendNodeResponse(whole, res, req, true))
      .catch((err) => failed(env, res, err));
  };
}

function failed(env: Pick<Services, 'log'>, res: ServerResponse, err: unknown): void {
  env.log.error({ err }, 'response could not be sent');
  if (!res.headersSent) res.writeHead(500);
  res.end();
}
