// Log drains as the API sees them: checked input (the kind's URL rules, the outbound guard, the
// apps named, the headers), then the row; the running drains reload after every change.
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { requireSealer } from '../crypto/seal.js';
import { badRequest, notFound } from '../http/errors.js';
import { OutboundRefused, type OutboundOptions } from '../net/outbound.js';
import { DRAIN_KIND_TABLE, type DrainKind } from './kinds/index.js';
import {
  appIdsExist,
  deleteDrainRow,
  drainSecrets,
  getDrainRow,
  insertDrain,
  updateDrainRow,
  type DrainRow,
} from './store.js';

export interface DrainInput {
  name: string;
  kind: DrainKind;
  url: string;
  app_ids?: string[] | null;
  headers?: Record<string, string>;
  enabled?: boolean;
}

export type DrainPatch = Partial<Omit<DrainInput, 'kind'>>;

export interface DrainDeps {
  db: Db;
  sealer: Sealer;
  /** The outbound guard's settings (the drains' transport). */
  guard: OutboundOptions;
}

export const MAX_HEADERS = 20;
/** Headers the client itself sets: a drain cannot change how its request is framed or addressed. */
const RESERVED = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'user-agent',
  'expect',
  'upgrade',
  'te',
  'trailer',
  'keep-alive',
  'proxy-authorization',
]);

function checkHeaders(kind: DrainKind, headers: Record<string, string>): void {
  const names = Object.keys(headers);
  if (!names.length) return;
  if (!DRAIN_KIND_TABLE[kind].http)
    throw badRequest('Headers apply to HTTP drains only', [{ field: 'headers', message: 'not for syslog' }]);
  if (names.length > MAX_HEADERS)
    throw badRequest(`At most ${MAX_HEADERS} headers`, [{ field: 'headers', message: 'too many' }]);
  const lower = new Set<string>();
  for (const [n, v] of Object.entries(headers)) {
    const l = n.toLowerCase();
    if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$/.test(n) || RESERVED.has(l) || lower.has(l))
      throw badRequest(`Header "${n.slice(0, 64)}" cannot be set`, [
        { field: `headers.${n.slice(0, 64)}`, message: 'not a header name a drain may set' },
      ]);
    if (typeof v !== 'string' || v.length > 4096 || /[\r\n\0]/.test(v))
      throw badRequest(`Header "${n}" has a value that cannot be sent`, [
        { field: `headers.${n}`, message: 'one line, at most 4096 characters' },
      ]);
    lower.add(l);
  }
}

async function checkUrl(kind: DrainKind, url: string, guard: OutboundOptions): Promise<void> {
  try {
    await DRAIN_KIND_TABLE[kind].check(url, guard);
  } catch (e) {
    if (e instanceof OutboundRefused)
      throw badRequest(`The drain URL is refused: ${e.reason}`, [{ field: 'url', message: e.reason }]);
    throw e;
  }
}

async function checkApps(db: Db, ids: string[] | null | undefined): Promise<string[] | null> {
  if (ids === undefined || ids === null) return null;
  if (!ids.length)
    throw badRequest('app_ids names at least one app (null: every app)', [
      { field: 'app_ids', message: 'empty' },
    ]);
  const unique = [...new Set(ids)];
  const missing = await appIdsExist(db, unique);
  if (missing.length)
    throw badRequest(`No app with id "${missing[0]}"`, [{ field: 'app_ids', message: 'no such app' }]);
  return unique;
}

export async function createDrain(
  deps: DrainDeps,
  input: DrainInput,
  now: number,
  id?: string,
): Promise<DrainRow> {
  requireSealer(deps.sealer);
  const headers = input.headers ?? {};
  checkHeaders(input.kind, headers);
  const appIds = await checkApps(deps.db, input.app_ids);
  await checkUrl(input.kind, input.url, deps.guard);
  const fields = {
    name: input.name,
    kind: input.kind,
    url: input.url,
    url_hint: DRAIN_KIND_TABLE[input.kind].hint(input.url),
    app_ids: appIds,
    headers,
    enabled: input.enabled !== false,
  };
  return getDrainRow(deps.db, await insertDrain(deps.db, deps.sealer, fields, now, id));
}

export async function updateDrain(
  deps: DrainDeps,
  id: string,
  patch: DrainPatch,
  now: number,
): Promise<DrainRow> {
  const cur = await getDrainRow(deps.db, id);
  if (patch.headers !== undefined) checkHeaders(cur.kind, patch.headers);
  const appIds = patch.app_ids !== undefined ? await checkApps(deps.db, patch.app_ids) : undefined;
  if (patch.url !== undefined) {
    requireSealer(deps.sealer);
    await checkUrl(cur.kind, patch.url, deps.guard);
  }
  if (patch.headers !== undefined) requireSealer(deps.sealer);
  await updateDrainRow(
    deps.db,
    deps.sealer,
    id,
    {
      name: patch.name,
      url: patch.url,
      url_hint: patch.url !== undefined ? DRAIN_KIND_TABLE[cur.kind].hint(patch.url) : undefined,
      app_ids: appIds,
      headers: patch.headers,
      enabled: patch.enabled,
    },
    now,
  );
  return getDrainRow(deps.db, id);
}

export async function deleteDrain(db: Db, id: string): Promise<void> {
  if (!(await deleteDrainRow(db, id))) throw notFound(`No log drain with id "${id}"`);
}

/** A revert's way back to a drain's URL and headers (opened, then sealed again by the update). */
export { drainSecrets };
