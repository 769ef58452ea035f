// node:http <-> Fetch for the common case, cheaper than the adapter's general conversion: a GET or
// HEAD becomes a Request without per-request listeners, and a Response with a string (or no) body
// and a plain header record is written with one writeHead and one end, as a bare node:http server
// writes it. Everything else goes through @whatwg-node/server (runtime/server.ts).
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import { Request } from '@whatwg-node/fetch';

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

/** What the fetch ponyfill keeps of a Response's init (read the same way by sendNodeResponse). */
interface PonyfillResponse {
  status: number;
  statusText: string;
  bodyType?: string;
  bodyInit?: unknown;
  headers: { headersInit?: unknown; _map?: unknown; _setCookies?: unknown[] };
}

/**
 * Writes a Response whose body is a string or absent and whose headers are still the plain record it
 * was made with: true when written, false for anything else (streams, buffers, changed headers).
 */
export function sendDirect(response: Response, res: ServerResponse): boolean {
  const r = response as unknown as PonyfillResponse;
  const h = r.headers;
  const init = h?.headersInit;
  if (
    init === null ||
    typeof init !== 'object' ||
    Array.isArray(init) ||
    'get' in init ||
    h._map ||
    h._setCookies?.length
  )
    return false;
  const text = r.bodyType === 'String';
  if (!text && r.bodyInit != null) return false;
  if (res.destroyed || res.writableEnded) return true;
  res.writeHead(r.status, r.statusText, init as Record<string, string>);
  if (text) res.end(r.bodyInit as string);
  else res.end();
  return true;
}
