// Where each (app, service) route sends requests: the addresses of its current containers.
// Kept as rows so the proxy's config stays a function of the database, and a restarted control
// plane (or Caddy) routes to the same containers as before without asking the engine.
import { isIP } from 'node:net';
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import type { UpstreamRow } from './config.js';
import type { ProxyState } from './sync.js';

export async function listUpstreams(db: Db): Promise<UpstreamRow[]> {
  const rows = await db
    .selectFrom('proxy_upstreams')
    .selectAll()
    .orderBy('app_id')
    .orderBy('service')
    .execute();
  return rows.map((r) => ({ app_id: r.app_id, service: r.service, addresses: parseAddresses(r.addresses) }));
}

function parseAddresses(json: string): string[] {
  try {
    const v = JSON.parse(json) as unknown;
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string' && isIP(x) !== 0) : [];
  } catch {
    return [];
  }
}

/** Container addresses are IPs the engine reported; anything else is a bug upstream, not input to pass on. */
function checkAddresses(addresses: readonly string[]): string[] {
  for (const a of addresses)
    if (isIP(a) === 0) throw new Error(`upstream address "${a}" is not an IP address`);
  return [...new Set(addresses)].sort();
}

export async function setUpstreams(
  db: Db,
  appId: string,
  service: string,
  addresses: readonly string[],
  now = Date.now(),
): Promise<void> {
  const list = JSON.stringify(checkAddresses(addresses));
  await db
    .insertInto('proxy_upstreams')
    .values({ app_id: appId, service, addresses: list, updated_at: nowIso(now) })
    .onConflict((c) =>
      c.columns(['app_id', 'service']).doUpdateSet({ addresses: list, updated_at: nowIso(now) }),
    )
    .execute();
}

export async function removeUpstreams(db: Db, appId: string, service?: string): Promise<void> {
  let q = db.deleteFrom('proxy_upstreams').where('app_id', '=', appId);
  if (service !== undefined) q = q.where('service', '=', service);
  await q.execute();
}

/**
 * The deployment pipeline's hook: points the service's routes at `addresses` in one load of
 * Caddy's config. Resolves once Caddy runs the new config (then the old containers may drain
 * and stop) or with `synced: false` when Caddy could not take it (then keep the old ones).
 */
export async function switchUpstreams(
  db: Db,
  proxy: { sync(reason?: string): Promise<ProxyState> },
  appId: string,
  service: string,
  addresses: readonly string[],
): Promise<ProxyState> {
  await setUpstreams(db, appId, service, addresses);
  return proxy.sync(`upstreams ${appId}/${service}`);
}
