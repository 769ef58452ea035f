// The HTTP delivery every HTTP kind shares: a POST through the guarded client, its answer read
// as a delivery (2xx ok; a redirect is a status, never followed).
import { checkOutboundUrl, OutboundRefused, postBody, type PostOptions } from '../../net/outbound.js';
import type { Delivery } from './types.js';

export async function postDelivery(
  url: string,
  body: Buffer | unknown,
  opts: PostOptions,
): Promise<Delivery> {
  try {
    const bytes = Buffer.isBuffer(body) ? body : Buffer.from(JSON.stringify(body));
    const r = await postBody(url, bytes, opts);
    if (r.status >= 200 && r.status < 300) return { ok: true, status: r.status };
    const hint = r.body.trim().slice(0, 200);
    const redirect = r.status >= 300 && r.status < 400 ? ' (redirects are not followed)' : '';
    return {
      ok: false,
      status: r.status,
      error: `the server answered ${r.status}${redirect}${hint ? `: ${hint}` : ''}`,
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
  return `${u.host}/…${url.slice(-4)}`;
}

/** The guard's save-time check of an https URL (http only for exempted addresses). */
export async function checkHttpUrl(url: string, guard: PostOptions): Promise<void> {
  await checkOutboundUrl(url, guard);
}
