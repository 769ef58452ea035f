// Domain rows, their uploaded certificates (key sealed) and the instance's base domain.
// Every write validates first and writes once, so a refused input leaves nothing behind.
import type { Db } from '../db/index.js';
import { isUniqueViolation, nowIso } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import type { DomainCertificateTable, DomainTable, HostCheckTable } from '../db/schema.js';
import { newId } from '../crypto/random.js';
import { HttpError, badRequest, conflict, notFound } from '../http/errors.js';
import { checkHostname } from '../util/hostname.js';
import { validateCertificate, type ValidatedCertificate } from './certificate.js';
import { certificateKeyBinding as keyBinding } from '../crypto/bindings.js';

export type DomainRow = DomainTable;
export type CertificateRow = DomainCertificateTable;
export type HostCheckRow = HostCheckTable;

const BASE_DOMAIN_KEY = 'base_domain';

export { certificateKeyBinding as keyBinding } from '../crypto/bindings.js';

function hostnameField(field: string, value: unknown): string {
  const r = checkHostname(value);
  if (!r.ok)
    throw badRequest(`Invalid ${field}: ${r.message}`, [{ field, rule: r.rule, message: r.message }]);
  return r.hostname;
}

function portField(value: unknown): number | null {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'number' || !Number.isInteger(value) || value < 1 || value > 65535) {
    throw badRequest('Invalid port: a whole number from 1 to 65535', [
      { field: 'port', message: 'must be a whole number from 1 to 65535' },
    ]);
  }
  return value;
}

/** The base domain in force: the instance setting when one was saved (null clears), else SVC_BASE_DOMAIN. */
export async function getBaseDomain(db: Db, fallback: string | null): Promise<string | null> {
  const row = await db
    .selectFrom('settings')
    .select('value')
    .where('key', '=', BASE_DOMAIN_KEY)
    .executeTakeFirst();
  if (!row) return fallback;
  const v = JSON.parse(row.value) as unknown;
  return typeof v === 'string' ? v : null;
}

export async function setBaseDomain(db: Db, value: unknown): Promise<string | null> {
  const base = value === null ? null : hostnameField('base_domain', value);
  const v = JSON.stringify(base);
  await db
    .insertInto('settings')
    .values({ key: BASE_DOMAIN_KEY, value: v })
    .onConflict((c) => c.column('key').doUpdateSet({ value: v }))
    .execute();
  return base;
}

export async function listDomainRows(db: Db, appId?: string): Promise<DomainRow[]> {
  let q = db.selectFrom('domains').selectAll().orderBy('hostname');
  if (appId !== undefined) q = q.where('app_id', '=', appId);
  return q.execute();
}

export async function getDomainRow(db: Db, id: string): Promise<DomainRow> {
  const row = await db.selectFrom('domains').selectAll().where('id', '=', id).executeTakeFirst();
  if (!row) throw notFound('No such domain');
  return row;
}

export interface DomainInput {
  hostname?: unknown;
  app_id?: unknown;
  service?: unknown;
  port?: unknown;
  redirect_to?: unknown;
}

export interface DomainRules {
  /** Hostnames the control plane itself uses (the control domain): refused with 409. */
  reserved: string[];
  /**
   * Why a hostname may not serve this app (null: none, a redirect) or null when it may: the
   * automatic and preview hosts reserved for apps (lib/proxy/reserved.ts). Refused with 409.
   */
  claim?: (hostname: string, appId: string | null) => string | null;
}

function refuseClaimed(rules: DomainRules | undefined, hostname: string, appId: string | null): void {
  const why = rules?.claim?.(hostname, appId);
  if (why) throw new HttpError('conflict', why, [{ field: 'hostname', rule: 'reserved', message: why }]);
}

/**
 * Checks an assignment: a service of an existing app with a port (its own or the domain's),
 * or a redirect, never both.
 */
async function checkTarget(
  db: Db,
  hostname: string,
  t: { app_id: string | null; service: string | null; port: number | null; redirect_to: string | null },
): Promise<void> {
  if (t.redirect_to !== null && (t.app_id !== null || t.service !== null)) {
    throw badRequest('A domain either serves an app service or redirects, not both', [
      { field: 'redirect_to', message: 'cannot be combined with app_id/service' },
    ]);
  }
  if (t.redirect_to !== null && t.redirect_to === hostname)
    throw badRequest('A domain cannot redirect to itself', [
      { field: 'redirect_to', message: 'equals the hostname' },
    ]);
  if (t.app_id === null) {
    if (t.service !== null)
      throw badRequest('service needs app_id', [{ field: 'app_id', message: 'required with service' }]);
    return;
  }
  const app = await db
    .selectFrom('apps')
    .select(['id'])
    .where('id', '=', t.app_id)
    .where('deleting_at', 'is', null)
    .executeTakeFirst();
  if (!app) throw badRequest('No such app', [{ field: 'app_id', message: 'no app with this id' }]);
  if (t.service === null)
    throw badRequest('service is required with app_id', [
      { field: 'service', message: 'required with app_id' },
    ]);
  if (t.port !== null) return;
  const svc = await db
    .selectFrom('app_services')
    .select(['port'])
    .where('app_id', '=', t.app_id)
    .where('name', '=', t.service)
    .executeTakeFirst();
  if (!svc || svc.port === null) {
    throw badRequest(
      `Service "${t.service}" has no port: set the service's port, or give the domain a port`,
      [{ field: 'port', message: 'the service has no port' }],
    );
  }
}

function optionalString(field: string, v: unknown): string | null {
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || v.length === 0 || v.length > 255)
    throw badRequest(`Invalid ${field}`, [{ field, message: 'must be a non-empty string' }]);
  return v;
}

export async function createDomain(
  db: Db,
  input: DomainInput,
  rules: DomainRules,
  now = Date.now(),
): Promise<DomainRow> {
  const hostname = hostnameField('hostname', input.hostname);
  const row: DomainRow = {
    id: newId(now),
    hostname,
    app_id: optionalString('app_id', input.app_id),
    service: optionalString('service', input.service),
    port: portField(input.port),
    redirect_to:
      input.redirect_to === undefined || input.redirect_to === null
        ? null
        : hostnameField('redirect_to', input.redirect_to),
    created_at: nowIso(now),
    updated_at: nowIso(now),
  };
  if (rules.reserved.includes(hostname)) throw conflict(`${hostname} is the control plane's own domain`);
  refuseClaimed(rules, hostname, row.app_id);
  await checkTarget(db, hostname, row);
  try {
    await db.insertInto('domains').values(row).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw conflict(`The hostname ${hostname} is already used by another domain`);
    throw e;
  }
  return row;
}

/** PATCH: reassign to another app service, turn into a redirect, or back. */
export async function updateDomain(
  db: Db,
  id: string,
  patch: DomainInput,
  now = Date.now(),
  rules?: DomainRules,
): Promise<{ before: DomainRow; after: DomainRow }> {
  const before = await getDomainRow(db, id);
  if (patch.hostname !== undefined && hostnameField('hostname', patch.hostname) !== before.hostname) {
    throw badRequest('The hostname of a domain cannot change; add a new domain instead', [
      { field: 'hostname', message: 'cannot change' },
    ]);
  }
  const next = { ...before };
  if (patch.redirect_to !== undefined) {
    next.redirect_to = patch.redirect_to === null ? null : hostnameField('redirect_to', patch.redirect_to);
    // Turning into a redirect drops the assignment unless the same patch gives one (then it is refused).
    if (next.redirect_to !== null && patch.app_id === undefined)
      Object.assign(next, { app_id: null, service: null, port: null });
  }
  if (patch.app_id !== undefined) {
    next.app_id = optionalString('app_id', patch.app_id);
    if (patch.redirect_to === undefined && next.app_id !== null) next.redirect_to = null;
    if (next.app_id === null && patch.service === undefined) next.service = null;
  }
  if (patch.service !== undefined) next.service = optionalString('service', patch.service);
  if (patch.port !== undefined) next.port = portField(patch.port);
  refuseClaimed(rules, next.hostname, next.redirect_to === null ? next.app_id : null);
  await checkTarget(db, next.hostname, next);
  next.updated_at = nowIso(now);
  await db
    .updateTable('domains')
    .set({
      app_id: next.app_id,
      service: next.service,
      port: next.port,
      redirect_to: next.redirect_to,
      updated_at: next.updated_at,
    })
    .where('id', '=', id)
    .execute();
  return { before, after: next };
}

export async function deleteDomain(db: Db, id: string): Promise<DomainRow> {
  const row = await getDomainRow(db, id);
  await db.deleteFrom('domains').where('id', '=', id).execute();
  await db.deleteFrom('host_checks').where('hostname', '=', row.hostname).execute();
  return row;
}

/** Uploaded certificates by domain (public parts only; the key stays sealed). */
export async function certificateRows(db: Db): Promise<CertificateRow[]> {
  return db.selectFrom('domain_certificates').selectAll().execute();
}

export async function getCertificateRow(db: Db, domainId: string): Promise<CertificateRow | null> {
  return (
    (await db
      .selectFrom('domain_certificates')
      .selectAll()
      .where('domain_id', '=', domainId)
      .executeTakeFirst()) ?? null
  );
}

/** Validates (pair, hostname, validity), seals the key and stores; replaces an earlier upload. */
export async function putCertificate(
  db: Db,
  sealer: Sealer,
  domainId: string,
  input: { cert_pem?: unknown; key_pem?: unknown },
  now = Date.now(),
): Promise<CertificateRow> {
  const domain = await getDomainRow(db, domainId);
  if (!sealer.available) sealer.seal('', ''); // throws the 503 that names the missing master key
  const v: ValidatedCertificate = validateCertificate(input.cert_pem, input.key_pem, domain.hostname, now);
  const row: CertificateRow = {
    domain_id: domainId,
    cert_pem: v.cert_pem,
    key_sealed: sealer.seal(v.key_pem, keyBinding(domainId)),
    issuer: v.info.issuer,
    not_after: v.info.not_after,
    fingerprint256: v.info.fingerprint256,
    created_at: nowIso(now),
  };
  await db
    .insertInto('domain_certificates')
    .values(row)
    .onConflict((c) =>
      c.column('domain_id').doUpdateSet({
        cert_pem: row.cert_pem,
        key_sealed: row.key_sealed,
        issuer: row.issuer,
        not_after: row.not_after,
        fingerprint256: row.fingerprint256,
        created_at: row.created_at,
      }),
    )
    .execute();
  return row;
}

export async function deleteCertificate(db: Db, domainId: string): Promise<boolean> {
  await getDomainRow(db, domainId);
  const r = await db.deleteFrom('domain_certificates').where('domain_id', '=', domainId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

/** The key of an uploaded certificate, opened for the proxy's config; null when it cannot be. */
export function openKey(sealer: Sealer, row: CertificateRow): string | null {
  try {
    return sealer.open(row.key_sealed, keyBinding(row.domain_id));
  } catch {
    // No master key, or a row that fails authentication: that certificate is left out.
    return null;
  }
}

export async function hostCheckRows(db: Db): Promise<Map<string, HostCheckRow>> {
  const rows = await db.selectFrom('host_checks').selectAll().execute();
  return new Map(rows.map((r) => [r.hostname, r]));
}

export async function getHostCheck(db: Db, hostname: string): Promise<HostCheckRow | null> {
  return (
    (await db.selectFrom('host_checks').selectAll().where('hostname', '=', hostname).executeTakeFirst()) ??
    null
  );
}

export async function saveHostCheck(db: Db, row: HostCheckRow): Promise<void> {
  const { hostname, ...rest } = row;
  await db
    .insertInto('host_checks')
    .values(row)
    .onConflict((c) => c.column('hostname').doUpdateSet(rest))
    .execute();
}

/** Observations of hosts that are no longer routed (deleted domains, removed services). */
export async function pruneHostChecks(db: Db, keep: ReadonlySet<string>): Promise<number> {
  const rows = await db.selectFrom('host_checks').select('hostname').execute();
  const gone = rows.map((r) => r.hostname).filter((h) => !keep.has(h));
  for (let i = 0; i < gone.length; i += 500)
    await db
      .deleteFrom('host_checks')
      .where('hostname', 'in', gone.slice(i, i + 500))
      .execute();
  return gone.length;
}

/** The app a domain serves (null: a redirect; undefined: no such domain), for the caller's reach. */
export async function domainAppId(db: Db, id: string): Promise<string | null | undefined> {
  const row = await db.selectFrom('domains').select('app_id').where('id', '=', id).executeTakeFirst();
  return row ? row.app_id : undefined;
}
