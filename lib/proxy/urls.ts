// Where an app answers: its automatic hosts and domains as URLs, HTTPS once a certificate is
// served for the name (until then Caddy serves the name over plain HTTP), with the proxy's ports.
import type { DomainStatus } from '../domains/status.js';
import { listDomains, type DomainCtx } from './domains.js';

export interface AppUrl {
  url: string;
  hostname: string;
  service: string | null;
  /** A host under the base domain, given to the app without asking. */
  automatic: boolean;
  /** The URL is https:// (a certificate is served for the name). */
  https: boolean;
  status: DomainStatus;
}

export function urlOf(
  hostname: string,
  https: boolean,
  ports: { httpPort: number; httpsPort: number },
): string {
  const port = https ? ports.httpsPort : ports.httpPort;
  const shown = port === (https ? 443 : 80) ? '' : `:${port}`;
  return `${https ? 'https' : 'http'}://${hostname}${shown}`;
}

/** The URLs of each app of `appIds` (one listing of every domain; automatic hosts first). */
export async function appUrls(ctx: DomainCtx, appIds: readonly string[]): Promise<Map<string, AppUrl[]>> {
  const out = new Map<string, AppUrl[]>(appIds.map((id) => [id, []]));
  if (!appIds.length) return out;
  const items = await listDomains(ctx, appIds.length === 1 ? appIds[0] : undefined);
  for (const d of items) {
    const list = d.app_id === null ? undefined : out.get(d.app_id);
    if (!list || d.redirect_to !== null) continue;
    const https = d.status === 'active';
    list.push({
      url: urlOf(d.hostname, https, ctx.config.proxy),
      hostname: d.hostname,
      service: d.service,
      automatic: 'managed' in d,
      https,
      status: d.status,
    });
  }
  for (const list of out.values()) list.sort((a, b) => Number(b.automatic) - Number(a.automatic));
  return out;
}
