// Responses are built with the adapter's Response and Headers: measured, Node's global Response is
// ~3x slower, and touching any of Node's fetch globals loads undici (about 12 MB resident).
import { Response, Headers } from '@whatwg-node/fetch';
import { HttpError } from './errors.js';

export const JSON_TYPE = 'application/json; charset=utf-8';

export function json(body: unknown, status = 200, headers?: Record<string, string> | Headers): Response {
  // A fresh init object each time: the fetch ponyfill records content-length into the init it is given.
  if (!headers) return new Response(JSON.stringify(body), { status, headers: { 'content-type': JSON_TYPE } });
  const h = new Headers(headers);
  h.set('content-type', JSON_TYPE);
  return new Response(JSON.stringify(body), { status, headers: h });
}

export function noContent(headers?: Headers): Response {
  return new Response(null, { status: 204, headers });
}

export function text(body: string, status = 200, contentType = 'text/plain; charset=utf-8'): Response {
  return new Response(body, { status, headers: { 'content-type': contentType } });
}

export function errorResponse(err: HttpError): Response {
  const body: Record<string, unknown> = { error: err.message, code: err.code };
  if (err.details?.length) body.details = err.details;
  return json(body, err.status, err.headers);
}

export { Response, Headers };
