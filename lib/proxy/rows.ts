// Reads the rows the edge is a function of. The only I/O on the way to Caddy's config.
import type { Config } from '../config.js';
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { certificateRows, getBaseDomain, hostCheckRows, listDomainRows, openKey } from '../domains/store.js';
import {
  effectiveControlDomain,
  type AppRow,
  type EdgeRows,
  type EdgeSettings,
  type HostState,
  type UploadedCertificate,
} from './config.js';

export interface EdgeContext {
  db: Db;
  config: Config;
  sealer: Sealer;
  now: () => number;
  /** host:port where Caddy reaches the control plane (the listening address once known). */
  controlUpstream: () => string;
  /** The secret of the wake route (lib/proxy/config.ts `WAKE_HEADER`). */
  wakeToken?: string;
  /** One host: where Caddy asks for services' addresses (lib/proxy/resolver.ts), once it listens. */
  resolver?: () => Promise<string | null>;
}

export function edgeSettings(
  config: Config,
  controlUpstream: string,
  wakeToken?: string,
  resolver?: string | null,
): EdgeSettings {
  const p = config.proxy;
  return {
    wakeToken,
    ...(resolver ? { resolver } : {}),
    httpPort: p.httpPort,
    httpsPort: p.httpsPort,
    accessLog: config.accessLog,
    acme: { ca: p.acmeCa, caRoot: p.acmeCaRoot, email: p.acmeEmail },
    controlUpstream,
    ...(config.cluster.mode === 'swarm' ? { cluster: 'swarm' as const } : {}),
  };
}

/** Where Caddy on this host reaches the control plane: loopback unless bound elsewhere. */
export function defaultControlUpstream(config: Config, port = config.port): string {
  const h = config.host;
  const host = h === '0.0.0.0' || h === 'localhost' ? '127.0.0.1' : h === '::' ? '::1' : h;
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export async function appRows(db: Db): Promise<AppRow[]> {
  const apps = await db
    .selectFrom('apps')
    .select(['id', 'name', 'sleeping_at', 'parent_app_id'])
    .where('deleting_at', 'is', null)
    .orderBy('name')
    .execute();
  // A preview's hosts are named after its app and number (pr-<n>-<app>), not after its own row.
  const previews = await db
    .selectFrom('previews')
    .innerJoin('apps as parent', 'parent.id', 'previews.app_id')
    .select(['previews.target_app_id', 'previews.number', 'parent.name'])
    .execute();
  const labels = new Map(previews.map((p) => [p.target_app_id, `pr-${p.number}-${p.name}`]));
  const services = await db
    .selectFrom('app_services')
    .select(['app_id', 'name', 'port'])
    .orderBy('app_id')
    .orderBy('name')
    .execute();
  const by = new Map<string, AppRow['services']>();
  for (const s of services) {
    let list = by.get(s.app_id);
    if (!list) by.set(s.app_id, (list = []));
    list.push({ name: s.name, port: s.port });
  }
  return apps.flatMap((a) => {
    const label = labels.get(a.id);
    if (a.parent_app_id && !label) return [];
    const row = { id: a.id, name: a.name, services: by.get(a.id) ?? [], sleeping: !!a.sleeping_at };
    return label ? { ...row, label } : row;
  });
}

export async function loadEdgeRows(ctx: EdgeContext): Promise<EdgeRows> {
  const { db, config, sealer } = ctx;
  const now = ctx.now();
  const [baseDomain, apps, domains, certs, checks, resolver] = await Promise.all([
    getBaseDomain(db, config.baseDomain),
    appRows(db),
    listDomainRows(db),
    certificateRows(db),
    hostCheckRows(db),
    ctx.resolver?.() ?? null,
  ]);
  const certificates: UploadedCertificate[] = [];
  for (const c of certs) {
    const key = openKey(sealer, c);
    if (key !== null) certificates.push({ domain_id: c.domain_id, cert_pem: c.cert_pem, key_pem: key });
  }
  const hosts = new Map<string, HostState>();
  for (const [h, c] of checks) {
    hosts.set(h, {
      pointsHere: c.dns_points_here === 1,
      certReady:
        c.cert_fingerprint256 !== null && c.cert_not_after !== null && Date.parse(c.cert_not_after) > now,
    });
  }
  return {
    settings: edgeSettings(config, ctx.controlUpstream(), ctx.wakeToken, resolver),
    baseDomain,
    controlDomain: effectiveControlDomain(config.proxy.controlDomain, baseDomain),
    apps,
    domains,
    certificates,
    hosts,
  };
}

/**
 * Containers of the app run again (a deploy, a start, a wake): its hosts route to them, not to the
 * wake path. The mark is routing state the proxy reads above; lib/sleep sets it.
 */
export async function clearSleepMark(db: Db, appId: string): Promise<void> {
  await db
    .updateTable('apps')
    .set({ sleeping_at: null })
    .where('id', '=', appId)
    .where('sleeping_at', 'is not', null)
    .execute();
}
