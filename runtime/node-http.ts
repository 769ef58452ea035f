// node:http <-> Fetch for the common case, cheaper than the adapter's general conversion: a GET or
// HEAD is a Request made only if a handler reads it (most never do), and a PlainResponse
// (lib/http/respond.ts) is written with one writeHead and one end, as a bare node:http server writes
// it. Everything else goes through @whatwg-node/server (runtime/server.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Request } from '@whatwg-node/fetch';
import { PlainResponse } from '#lib/http/respond.js';

/**
 * The Fetch Request of a GET or HEAD (no body). Its signal aborts when the client goes away before
 * the answer is sent, like the adapter's; it is made on first read, since almost no handler reads it.
 */
export class BodylessRequest extends Request {
  readonly #res: ServerResponse;
  #signal: AbortSignal | undefined;

  constructor(req: IncomingMessage, res: ServerResponse) {
    super(urlOf(req), { method: req.method, headers: req.headers as Record<string, string> });
    this.#res = res;
  }

  static {
    Object.defineProperty(this.prototype, 'signal', {
      configurable: true,
      get(this: BodylessRequest) {
        return (this.#signal ??= closedSignal(this.#res));
      },
    });
  }
}

/**
 * A GET or HEAD as the dispatcher sees it: its method without any other object, and the whole
 * Fetch Request (a BodylessRequest) made the first time anything else of it is read.
 */
export class LazyRequest implements Request {
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  #real: Request | undefined;

  constructor(req: IncomingMessage, res: ServerResponse) {
    this.#req = req;
    this.#res = res;
  }

  get method(): string {
    return this.#req.method!;
  }
  get real(): Request {
    return (this.#real ??= new BodylessRequest(this.#req, this.#res));
  }
  get url(): string {
    return this.real.url;
  }
  get headers(): Headers {
    return this.real.headers;
  }
  get signal(): AbortSignal {
    return this.real.signal;
  }
  get body(): Request['body'] {
    return this.real.body;
  }
  get bodyUsed(): boolean {
    return this.#real?.bodyUsed ?? false;
  }
  get cache(): RequestCache {
    return this.real.cache;
  }
  get credentials(): RequestCredentials {
    return this.real.credentials;
  }
  get destination(): RequestDestination {
    return this.real.destination;
  }
  get integrity(): string {
    return this.real.integrity;
  }
  get keepalive(): boolean {
    return this.real.keepalive;
  }
  get mode(): RequestMode {
    return this.real.mode;
  }
  get redirect(): RequestRedirect {
    return this.real.redirect;
  }
  get referrer(): string {
    return this.real.referrer;
  }
  get referrerPolicy(): ReferrerPolicy {
    return this.real.referrerPolicy;
  }
  arrayBuffer(): Promise<ArrayBuffer> {
    return this.real.arrayBuffer();
  }
  blob(): Promise<Blob> {
    return this.real.blob();
  }
  bytes(): ReturnType<Request['bytes']> {
    return this.real.bytes();
  }
  formData(): Promise<FormData> {
    return this.real.formData();
  }
  json(): Promise<unknown> {
    return this.real.json();
  }
  text(): Promise<string> {
    return this.real.text();
  }
  clone(): Request {
    return this.real.clone();
  }
}

function closedSignal(res: ServerResponse): AbortSignal {
  const ctrl = new AbortController();
  if (res.destroyed && !res.writableFinished) ctrl.abort();
  else res.once('close', () => res.writableFinished || ctrl.abort());
  return ctrl.signal;
}

/** The same absolute URL the adapter builds: scheme, Host (or the local address), request target. */
function urlOf(req: IncomingMessage): string {
  const scheme = (req.socket as TLSSocket).encrypted ? 'https' : 'http';
  let host = req.headers.host;
  if (!host) {
    const local = req.socket.localAddress;
    host =
      local && !local.includes('::') && !local.includes('ffff')
        ? `${local}:${req.socket.localPort ?? 80}`
        : 'localhost';
  }
  return `${scheme}://${host}${req.url ?? '/'}`;
}

/**
 * Writes a PlainResponse nobody read as a Fetch Response: true when written (or nobody is left to
 * write to), false for anything else (streams, buffers, a response whose headers were read or
 * changed), which the adapter writes.
 */
export function sendDirect(response: Response, res: ServerResponse): boolean {
  if (!(response instanceof PlainResponse)) return false;
  if (res.destroyed || res.writableEnded) return true;
  return response.send(res);
}
