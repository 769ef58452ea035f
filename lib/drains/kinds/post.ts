// The POST both HTTP kinds make: through the guarded client with the drain's headers; any 2xx
// is a delivery, anything else (or no answer) is retried by the drain.
import { OutboundRefused, postBody } from '../../net/outbound.js';
import type { BatchResult, DrainTarget } from './types.js';

/** Drains send bigger bodies than notifications and read only a short answer. */
const DRAIN_TIMEOUT_MS = 10_000;

export async function postBatch(target: DrainTarget, url: string, body: Buffer): Promise<BatchResult> {
  try {
    const r = await postBody(url, body, {
      ...target.transport,
      timeoutMs: target.transport.timeoutMs ?? DRAIN_TIMEOUT_MS,
      maxBytes: 4096,
      headers: target.headers,
    });
    if (r.status >= 200 && r.status < 300) return { ok: true, status: r.status };
    const hint = r.body.trim().slice(0, 200);
    return {
      ok: false,
      status: r.status,
      error: `the receiver answered ${r.status}${hint ? `: ${hint}` : ''}`,
    };
  } catch (e) {
    if (e instanceof OutboundRefused)
      return { ok: false, status: null, error: `refused: ${e.reason}`, refused: true };
    return { ok: false, status: null, error: (e as Error).message };
  }
}

/** The host and the last 4 characters of the URL: all an answer shows of it. */
export function urlHint(url: string): string {
  const u = new URL(url);
  return `${u.protocol}//${u.host}/…${url.slice(-4)}`;
}
