// Responses. Almost every answer is a status, a few headers and a string (or no body): a
// PlainResponse keeps just that, and a host that writes it as it is (runtime/node-http.ts) makes no
// other object. To anyone who reads it as a Fetch Response (its headers, its body), it is one: the
// adapter's Response is made on first use and answers from then on. Measured, Node's global
// Response is ~3x slower than the adapter's, and touching any of Node's fetch globals loads undici
// (about 12 MB resident).
import { Response, Headers } from '@whatwg-node/fetch';
import { HttpError } from './errors.js';

export const JSON_TYPE = 'application/json; charset=utf-8';
const JSON_HEAD = { 'content-type': JSON_TYPE };
const TEXT_TYPE = 'text/plain;charset=UTF-8';

/** What a host writes a plain response on (node:http's ServerResponse is one). */
export interface PlainTarget {
  writeHead(status: number, headers: Record<string, string>): unknown;
  end(body?: string): unknown;
}

export class PlainResponse implements Response {
  readonly status: number;
  readonly #headers: Record<string, string>;
  readonly #text: string | null;
  /** The Fetch Response, once something read this as one. */
  #real: Response | undefined;

  /** `headers` becomes this response's own: pass a record nobody else changes. */
  constructor(text: string | null, status: number, headers: Record<string, string>) {
    this.status = status;
    this.#text = text;
    this.#headers = headers;
  }

  /**
   * Writes this on `target` as it is, unless it was read as a Fetch Response (its headers may have
   * changed since): false then, and the host writes `real`.
   */
  send(target: PlainTarget): boolean {
    if (this.#real !== undefined) return false;
    const headers = this.#headers;
    const text = this.#text;
    if (text === null) {
      target.writeHead(this.status, headers);
      target.end();
      return true;
    }
    // As the adapter's Response would: a string's length and type, unless the headers say.
    headers['content-type'] ??= TEXT_TYPE;
    if (text.length > 0) headers['content-length'] ??= String(Buffer.byteLength(text));
    target.writeHead(this.status, headers);
    target.end(text);
    return true;
  }

  /** The Fetch Response this stands for (made once; from then on it is the one that counts). */
  get real(): Response {
    return (this.#real ??= new Response(this.#text, { status: this.status, headers: this.#headers }));
  }

  get ok(): boolean {
    return this.status >= 200 && this.status < 300;
  }
  get headers(): Headers {
    return this.real.headers;
  }
  get statusText(): string {
    return this.real.statusText;
  }
  get redirected(): boolean {
    return false;
  }
  get type(): ResponseType {
    return 'default';
  }
  get url(): string {
    return '';
  }
  get body(): Response['body'] {
    return this.real.body;
  }
  get bodyUsed(): boolean {
    return this.#real?.bodyUsed ?? false;
  }
  arrayBuffer(): Promise<ArrayBuffer> {
    return this.real.arrayBuffer();
  }
  blob(): Promise<Blob> {
    return this.real.blob();
  }
  bytes(): ReturnType<Response['bytes']> {
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
  clone(): Response {
    return this.real.clone();
  }
}

export function json(body: unknown, status = 200, headers?: Record<string, string> | Headers): Response {
  // `undefined` has no JSON: no body, as the adapter's Response makes of it.
  const text = (JSON.stringify(body) as string | undefined) ?? null;
  if (headers !== undefined && isHeaders(headers)) {
    const h = new Headers(headers);
    h.set('content-type', JSON_TYPE);
    return new Response(text, { status, headers: h });
  }
  // The length now, so the record is made whole (a property added later costs another object).
  if (headers === undefined && text !== null)
    return new PlainResponse(text, status, {
      'content-type': JSON_TYPE,
      'content-length': String(Buffer.byteLength(text)),
    });
  return new PlainResponse(text, status, record(headers, JSON_HEAD));
}

export function noContent(headers?: Headers | Record<string, string>): Response {
  if (headers === undefined || !isHeaders(headers)) return new PlainResponse(null, 204, record(headers));
  return new Response(null, { status: 204, headers });
}

export function text(body: string, status = 200, contentType = 'text/plain; charset=utf-8'): Response {
  return new PlainResponse(body, status, { 'content-type': contentType });
}

export function errorResponse(err: HttpError): Response {
  const body: Record<string, unknown> = { error: err.message, code: err.code };
  if (err.details?.length) body.details = err.details;
  return json(body, err.status, err.headers);
}

export function isHeaders(h: Record<string, string> | Headers): h is Headers {
  return typeof (h as Headers).get === 'function';
}

/** A fresh header record: the names lower-cased (as Headers would), then `over` on top. */
export function record(
  headers: Record<string, string> | undefined,
  over?: Record<string, string>,
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name in headers) out[name.toLowerCase()] = headers[name]!;
  return over ? Object.assign(out, over) : out;
}

export { Response, Headers };
