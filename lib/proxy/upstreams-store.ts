// Where each (app, service) route sends requests: the addresses of its current containers.
// Kept as rows so that a restarted control plane answers Caddy's lookups (lib/proxy/resolver.ts)
// with the same containers as before without asking the engine; Caddy's config never holds them.
import { isIP } from 'node:net';
import type { Db } from '../db/index.js';
import { nowIso } from '../db/index.js';
import type { UpstreamRow } from './config.js';
import type { Answers } from './resolver.js';
import { serviceLabel } from './lookup-names.js';

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
 * What the resolver answers, from the rows: per app (one, or all with null), per service label,
 * the addresses. An app that sleeps or is being deleted has no answer at all.
 */
export async function lookupAnswers(db: Db, appId: string | null): Promise<Answers> {
  let q = db
    .selectFrom('proxy_upstreams')
    .innerJoin('apps', 'apps.id', 'proxy_upstreams.app_id')
    .select(['proxy_upstreams.app_id', 'proxy_upstreams.service', 'proxy_upstreams.addresses'])
    .where('apps.sleeping_at', 'is', null)
    .where('apps.deleting_at', 'is', null);
  if (appId !== null) q = q.where('proxy_upstreams.app_id', '=', appId);
  const out = new Map<string, Map<string, string[]>>();
  for (const r of await q.execute()) {
    const addresses = parseAddresses(r.addresses);
    if (!addresses.length) continue;
    let app = out.get(r.app_id);
    if (!app) out.set(r.app_id, (app = new Map()));
    app.set(serviceLabel(r.service), addresses);
  }
  return out;
}

/**
 * Points the service's routes at `addresses`: the rows, then the resolver's answer. Resolves once
 * Caddy has picked it up (then the old containers may drain and stop), with the ms waited for it.
 */
export async function switchUpstreams(
  db: Db,
  edge: { publish(appId: string): Promise<number | null> },
  appId: string,
  service: string,
  addresses: readonly string[],
): Promise<number | null> {
  await setUpstreams(db, appId, service, addresses);
  return edge.publish(appId);
}
