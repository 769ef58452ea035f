import type { z } from 'zod';
import { ClientAbortError, HttpError, badRequest } from './errors.js';

export const MAX_BODY_BYTES = 1024 * 1024;

/** Reads at most `limit` bytes; a larger body is refused before it is buffered whole. */
export async function readBodyBytes(request: Request, limit = MAX_BODY_BYTES): Promise<Uint8Array> {
  const declared = request.headers.get('content-length');
  if (declared !== null && Number(declared) > limit) throw tooLarge(limit);
  if (!request.body) return new Uint8Array(0);
  const reader = request.body.getReader();
  const chunks: Uint8Array[] = [];
  let total = 0;
  for (;;) {
    let chunk: ReadableStreamReadResult<Uint8Array>;
    try {
      chunk = await reader.read();
    } catch {
      // The only way a request body stream fails is the client closing the connection mid-body.
      throw new ClientAbortError();
    }
    const { done, value } = chunk;
    if (done) break;
    total += value.byteLength;
    if (total > limit) {
      await reader.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    chunks.push(value);
  }
  if (chunks.length === 1) return chunks[0]!;
  const out = new Uint8Array(total);
  let off = 0;
  for (const c of chunks) {
    out.set(c, off);
    off += c.byteLength;
  }
  return out;
}

function tooLarge(limit: number): HttpError {
  return new HttpError('payload_too_large', `Request body is larger than ${limit} bytes`);
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** `emptyOk`: a route whose body is optional reads no body as `undefined`. */
export async function readJson(request: Request, limit = MAX_BODY_BYTES, emptyOk = false): Promise<unknown> {
  const bytes = await readBodyBytes(request, limit);
  if (bytes.byteLength === 0) {
    if (emptyOk) return undefined;
    throw badRequest('Request body must be JSON');
  }
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    throw badRequest('Request body is not valid UTF-8');
  }
  try {
    return JSON.parse(text);
  } catch {
    throw badRequest('Request body is not valid JSON');
  }
}

/** zod issues -> the contract's details, naming each field by its path. */
export function validationError(error: z.ZodError, where: 'body' | 'query' | 'params' = 'body'): HttpError {
  // An unknown key is named itself (`expires_in`), not the object that carries it.
  const details = error.issues.flatMap((i) =>
    i.code === 'unrecognized_keys'
      ? i.keys.map((k) => ({ field: [...i.path, k].join('.'), message: 'unknown field' }))
      : [{ field: i.path.length ? i.path.join('.') : where, message: i.message }],
  );
  const first = details[0];
  const msg = first
    ? `Invalid ${where === 'body' ? 'field' : where} "${first.field}": ${first.message}`
    : `Invalid ${where}`;
  return badRequest(msg, details);
}
