// Domain operations as the API performs them: each saves its rows first, checks the host, then
// brings Caddy in line, and answers with the domain and whether the proxy took the change.
// Without a reachable Caddy the rows are still saved and `proxy.synced` is false; the next sync
// (the periodic check, a boot, another change) applies them.
import type { Config } from '../config.js';
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import type { Edge } from './edge.js';
import { automaticHosts, effectiveControlDomain } from './config.js';
import { appRows } from './store.js';
import {
  createDomain,
  deleteCertificate,
  deleteDomain,
  getBaseDomain,
  getCertificateRow,
  getDomainRow,
  getHostCheck,
  hostCheckRows,
  listDomainRows,
  certificateRows,
  putCertificate,
  setBaseDomain,
  updateDomain,
  type DomainInput,
  type DomainRow,
} from '../domains/store.js';
import { checkHostname } from '../util/hostname.js';
import { HttpError, badRequest } from '../http/errors.js';
import { collisionsUnder, domainsInNamespace, reservationOf, type Reservation } from './reserved.js';
import { automaticHostView, domainView, type AutomaticHostView, type DomainView } from '../domains/status.js';

export interface DomainCtx {
  db: Db;
  sealer: Sealer;
  config: Config;
  now: () => number;
  edge: Edge;
}

export interface ProxySummary {
  synced: boolean;
  error?: string;
}

async function view(ctx: DomainCtx, row: DomainRow): Promise<DomainView> {
  const [cert, check] = await Promise.all([
    getCertificateRow(ctx.db, row.id),
    getHostCheck(ctx.db, row.hostname),
  ]);
  return domainView(row, cert, check, ctx.now());
}

async function applied(ctx: DomainCtx, hostname: string | null): Promise<ProxySummary> {
  if (hostname) {
    try {
      await ctx.edge.checker.refresh(hostname);
    } catch {
      // A failed check leaves the host awaiting DNS; the change itself still goes to the proxy.
    }
  }
  await ctx.edge.proxy.sync('domain change');
  return ctx.edge.proxy.summary();
}

async function controlDomain(ctx: DomainCtx): Promise<string | null> {
  return effectiveControlDomain(
    ctx.config.proxy.controlDomain,
    await getBaseDomain(ctx.db, ctx.config.baseDomain),
  );
}

/** The hub (every domain and automatic host), or one app's. */
export async function listDomains(
  ctx: DomainCtx,
  appId?: string,
): Promise<Array<DomainView | AutomaticHostView>> {
  const [rows, certs, checks, base, apps] = await Promise.all([
    listDomainRows(ctx.db, appId),
    certificateRows(ctx.db),
    hostCheckRows(ctx.db),
    getBaseDomain(ctx.db, ctx.config.baseDomain),
    appRows(ctx.db),
  ]);
  const now = ctx.now();
  const byDomain = new Map(certs.map((c) => [c.domain_id, c]));
  const auto = automaticHosts(base, apps);
  const served = new Set(auto.map((a) => a.hostname));
  const items: Array<DomainView | AutomaticHostView> = rows.map((r) =>
    shadowed(domainView(r, byDomain.get(r.id) ?? null, checks.get(r.hostname) ?? null, now), served),
  );
  const control = await controlDomain(ctx);
  for (const a of auto) {
    if (appId !== undefined && a.appId !== appId) continue;
    if (a.hostname === control) continue;
    items.push(automaticHostView(a, checks.get(a.hostname) ?? null, now));
  }
  return items;
}

/**
 * A custom domain that is an automatic host (one saved before hosts were reserved, see
 * docs/operating.md) is not served: the automatic host wins. Its status says so.
 */
function shadowed(v: DomainView, automatic: ReadonlySet<string>): DomainView {
  if (!automatic.has(v.hostname)) return v;
  return {
    ...v,
    status: 'error',
    status_detail: `not served: ${v.hostname} is an app's automatic host, which takes precedence; delete this domain`,
  };
}

/** The rules a domain's hostname passes: not the control domain, not an app's reserved host. */
async function domainRules(ctx: DomainCtx) {
  const [control, base, apps] = await Promise.all([
    controlDomain(ctx),
    getBaseDomain(ctx.db, ctx.config.baseDomain),
    appRows(ctx.db),
  ]);
  return {
    reserved: control ? [control] : [],
    claim: (hostname: string, appId: string | null) =>
      reservationOf(hostname, appId, base, apps)?.message ?? null,
  };
}

/**
 * Refuses an app name whose automatic and preview hosts would take a custom domain of another
 * app (or a redirect): the new app would silently take its traffic (docs/operating.md, "Reserved hosts").
 */
export async function refuseNameTakingDomains(
  ctx: Pick<DomainCtx, 'db' | 'config'>,
  name: string,
): Promise<void> {
  const [base, rows, apps] = await Promise.all([
    getBaseDomain(ctx.db, ctx.config.baseDomain),
    listDomainRows(ctx.db),
    appRows(ctx.db),
  ]);
  // The name is taken already: creating the app answers that conflict.
  if (apps.some((a) => a.name === name && a.label === undefined)) return;
  const taken = domainsInNamespace(name, base, rows);
  if (taken.length === 0) return;
  const shown = taken.slice(0, 5).join(', ') + (taken.length > 5 ? ` and ${taken.length - 5} more` : '');
  throw new HttpError(
    'conflict',
    `An app named "${name}" would take the domains ${shown}: its automatic and preview hosts (${name}.${base}, <anything>.${name}.${base}, pr-<n>-${name}.${base}) are reserved for it. Delete or rename those domains, or choose another name`,
    [{ field: 'name', rule: 'reserved', message: `would take ${shown}` }],
  );
}

export async function getDomain(ctx: DomainCtx, id: string): Promise<DomainView> {
  return view(ctx, await getDomainRow(ctx.db, id));
}

export async function addDomain(
  ctx: DomainCtx,
  input: DomainInput,
): Promise<{ domain: DomainView; proxy: ProxySummary }> {
  const row = await createDomain(ctx.db, input, await domainRules(ctx), ctx.now());
  const proxy = await applied(ctx, row.app_id !== null || row.redirect_to !== null ? row.hostname : null);
  return { domain: await view(ctx, row), proxy };
}

export async function changeDomain(
  ctx: DomainCtx,
  id: string,
  patch: DomainInput,
): Promise<{ domain: DomainView; before: DomainRow; proxy: ProxySummary }> {
  const { before, after } = await updateDomain(ctx.db, id, patch, ctx.now(), await domainRules(ctx));
  const proxy = await applied(ctx, after.hostname);
  return { domain: await view(ctx, after), before, proxy };
}

export async function removeDomain(
  ctx: DomainCtx,
  id: string,
): Promise<{ before: DomainRow; proxy: ProxySummary }> {
  const before = await deleteDomain(ctx.db, id);
  return { before, proxy: await applied(ctx, null) };
}

/** Re-checks DNS and the served certificate now. */
export async function refreshDomain(
  ctx: DomainCtx,
  id: string,
): Promise<{ domain: DomainView; proxy: ProxySummary }> {
  const row = await getDomainRow(ctx.db, id);
  const proxy = await applied(ctx, row.hostname);
  // The sync may have just handed the host to the CA or loaded a certificate: look again.
  await ctx.edge.checker.refresh(row.hostname).catch(() => {});
  return { domain: await view(ctx, row), proxy };
}

export async function uploadCertificate(
  ctx: DomainCtx,
  id: string,
  input: { cert_pem?: unknown; key_pem?: unknown },
): Promise<{ domain: DomainView; proxy: ProxySummary }> {
  await putCertificate(ctx.db, ctx.sealer, id, input, ctx.now());
  const row = await getDomainRow(ctx.db, id);
  await ctx.edge.proxy.sync('certificate');
  const proxy = await applied(ctx, row.hostname);
  return { domain: await view(ctx, row), proxy };
}

export async function removeCertificate(
  ctx: DomainCtx,
  id: string,
): Promise<{ domain: DomainView; proxy: ProxySummary }> {
  await deleteCertificate(ctx.db, id);
  const row = await getDomainRow(ctx.db, id);
  await ctx.edge.proxy.sync('certificate');
  const proxy = await applied(ctx, row.hostname);
  return { domain: await view(ctx, row), proxy };
}

export async function instanceDomains(
  ctx: DomainCtx,
): Promise<{ base_domain: string | null; control_domain: string | null }> {
  const base = await getBaseDomain(ctx.db, ctx.config.baseDomain);
  return { base_domain: base, control_domain: effectiveControlDomain(ctx.config.proxy.controlDomain, base) };
}

/**
 * A base domain under which an existing custom domain would be an app's reserved host is refused
 * (409 naming each): the automatic host would silently take it over (docs/operating.md, "Reserved hosts").
 */
async function refuseCollisions(ctx: DomainCtx, value: unknown): Promise<void> {
  if (value === null) return;
  const r = checkHostname(value);
  if (!r.ok) return; // setBaseDomain answers the 400 naming the rule
  const [apps, rows] = await Promise.all([appRows(ctx.db), listDomainRows(ctx.db)]);
  const hits: Reservation[] = collisionsUnder(r.hostname, apps, rows).slice(0, 10);
  if (hits.length === 0) return;
  throw new HttpError(
    'conflict',
    `Under the base domain ${r.hostname} these custom domains would become reserved hosts of other apps: ${hits.map((h) => h.message).join('; ')}. Delete or move them first`,
    hits.map((h) => ({ field: 'base_domain', rule: 'reserved', message: h.message })),
  );
}

/** `PUT /api/instance/base-domain`: null clears (SVC_BASE_DOMAIN no longer applies either). */
export async function putBaseDomain(
  ctx: DomainCtx,
  value: unknown,
): Promise<{ base_domain: string | null; control_domain: string | null; proxy: ProxySummary }> {
  await refuseCollisions(ctx, value);
  const base = await setBaseDomain(ctx.db, value);
  const control = effectiveControlDomain(ctx.config.proxy.controlDomain, base);
  // New automatic hosts and control domain: check them all before the sync decides what to issue.
  await ctx.edge.checker.tick();
  const proxy = await applied(ctx, control);
  return { base_domain: base, control_domain: control, proxy };
}

/** `GET /api/instance/dns-check?host=`: the hostname rules first (400 naming the rule), then the lookup. */
export async function checkDnsOf(
  ctx: Pick<DomainCtx, 'edge'>,
  host: unknown,
): Promise<{ host: string; expected: string[]; resolved: string[]; points_here: boolean; error?: string }> {
  const r = checkHostname(host);
  if (!r.ok)
    throw badRequest(`Invalid host: ${r.message}`, [{ field: 'host', rule: r.rule, message: r.message }]);
  const c = await ctx.edge.dnsCheck(r.hostname);
  return {
    host: c.host,
    expected: c.expected,
    resolved: c.resolved,
    points_here: c.points_here,
    ...(c.error ? { error: c.error } : {}),
  };
}
