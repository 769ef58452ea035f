// App environment: every value is sealed at rest and bound to its app and key; secret ones are
// also redacted when listed. Values are kept byte for byte (quotes, $, #, =, newlines, unicode).
import type { Selectable, Transaction } from 'kysely';
import type { Db } from '../db/index.js';
import { lockedOn } from '../db/index.js';
import type { AppEnvTable, Database } from '../db/schema.js';
import { requireSealer, type Sealer } from '../crypto/seal.js';
import { badRequest, notFound, preconditionFailed } from '../http/errors.js';
import { ifMatchHolds } from '../http/headers.js';
import { ENV_MAX_VALUE, ENV_MAX_VARS } from './model.js';

export const envBinding = (appId: string, key: string) => `app:${appId}:env:${key}`;
/** Preview-only variables of an app (lib/previews): bound apart from its own, never mistaken for them. */
export const previewEnvBinding = (appId: string, key: string) => `app:${appId}:preview-env:${key}`;

export interface EnvItem {
  key: string;
  secret: boolean;
  value: string | null;
}

type EnvRow = Selectable<AppEnvTable>;
type Reader = Db | Transaction<Database>;

/** The listing and its ETag, read together so the tag is the listing's own. */
export interface EnvSet {
  items: EnvItem[];
  etag: string;
}

const readRows = (db: Reader, appId: string): Promise<EnvRow[]> =>
  db.selectFrom('app_env').selectAll().where('app_id', '=', appId).orderBy('key').execute();

const toItem = (sealer: Sealer, appId: string, r: EnvRow): EnvItem => ({
  key: r.key,
  secret: r.secret === 1,
  value: r.secret === 1 ? null : sealer.open(r.sealed, envBinding(appId, r.key)),
});

const TAG_PURPOSE = 'env-etag';
const VALUE_PURPOSE = 'env-etag-value';

/**
 * A strong validator of the set: keys, secret flags and a keyed fingerprint of each value (HMAC
 * under a key derived from the master key), so it changes with any value, never shows one, and
 * cannot be checked against a guessed secret without the master key. Sealed envelopes are not
 * used: they change at every write even when the value does not.
 */
function envTag(sealer: Sealer, appId: string, rows: EnvRow[]): string {
  if (rows.length === 0) return '"empty"';
  const canon = rows.map((r) => [
    r.key,
    r.secret === 1,
    sealer.digest(VALUE_PURPOSE, sealer.open(r.sealed, envBinding(appId, r.key))),
  ]);
  return `"${sealer.digest(TAG_PURPOSE, JSON.stringify(canon)).slice(0, 32)}"`;
}

export async function listEnv(db: Db, sealer: Sealer, appId: string): Promise<EnvItem[]> {
  return (await readRows(db, appId)).map((r) => toItem(sealer, appId, r));
}

export async function readEnvSet(db: Db, sealer: Sealer, appId: string): Promise<EnvSet> {
  const rows = await readRows(db, appId);
  return { items: rows.map((r) => toItem(sealer, appId, r)), etag: envTag(sealer, appId, rows) };
}

/**
 * Every write to the set runs here: the If-Match comparison and the change in one transaction
 * (the connection is held for its length), so no other write lands between the check and the
 * change; the answered tag is the one this write produced. `change` answers what it wants back.
 */
async function writeEnv<T>(
  db: Db,
  sealer: Sealer,
  appId: string,
  ifMatch: string | null,
  change: (tx: Transaction<Database>, existing: EnvRow[]) => Promise<T>,
): Promise<{ result: T; set: EnvSet }> {
  return db.transaction().execute(async (tx) => {
    // The set is the app's rows, some of them yet to exist: the app's own row is what is locked
    // (PostgreSQL), so two changes of one app's variables run one after the other.
    await tx.selectFrom('apps').select('id').where('id', '=', appId).$call(lockedOn(tx)).execute();
    const existing = await readRows(tx, appId);
    if (ifMatch !== null && !ifMatchHolds(ifMatch, envTag(sealer, appId, existing))) {
      throw preconditionFailed(
        'The variables changed since they were read (If-Match no longer matches): reload them and apply the change again',
      );
    }
    const result = await change(tx, existing);
    const rows = await readRows(tx, appId);
    return {
      result,
      set: { items: rows.map((r) => toItem(sealer, appId, r)), etag: envTag(sealer, appId, rows) },
    };
  });
}

/** The plain values, for containers and builds only: never for an API answer or a log. */
export async function resolveEnv(db: Db, sealer: Sealer, appId: string): Promise<Record<string, string>> {
  const rows = await db.selectFrom('app_env').selectAll().where('app_id', '=', appId).execute();
  if (rows.length) requireSealer(sealer);
  const out: Record<string, string> = {};
  for (const r of rows) out[r.key] = sealer.open(r.sealed, envBinding(appId, r.key));
  return out;
}

/** The keys marked secret and their values (for masking logs): unreadable ones are left out. */
export async function secretEnv(db: Db, sealer: Sealer, appId: string): Promise<Map<string, string>> {
  const rows = await db
    .selectFrom('app_env')
    .select(['key', 'sealed'])
    .where('app_id', '=', appId)
    .where('secret', '=', 1)
    .execute();
  const out = new Map<string, string>();
  for (const r of rows) {
    try {
      out.set(r.key, sealer.open(r.sealed, envBinding(appId, r.key)));
    } catch {
      // No master key: whoever needs the value fails with the reason.
    }
  }
  return out;
}

export async function revealEnv(db: Db, sealer: Sealer, appId: string, key: string): Promise<string | null> {
  const r = await db
    .selectFrom('app_env')
    .selectAll()
    .where('app_id', '=', appId)
    .where('key', '=', key)
    .executeTakeFirst();
  return r ? sealer.open(r.sealed, envBinding(appId, key)) : null;
}

export interface EnvInput {
  key: string;
  value: string | null;
  secret?: boolean;
}

/**
 * Replaces the whole set in one transaction. `value: null` keeps the stored value of an
 * existing key (so a client can resubmit a listing with redacted secrets untouched).
 */
export async function replaceEnv(
  db: Db,
  sealer: Sealer,
  appId: string,
  items: EnvInput[],
): Promise<EnvItem[]> {
  return (await replaceEnvSet(db, sealer, appId, items, null)).items;
}

/** replaceEnv, honouring an If-Match header (412 precondition_failed and nothing changed when it fails). */
export async function replaceEnvSet(
  db: Db,
  sealer: Sealer,
  appId: string,
  items: EnvInput[],
  ifMatch: string | null,
): Promise<EnvSet> {
  if (items.length > ENV_MAX_VARS)
    throw badRequest(`At most ${ENV_MAX_VARS} variables`, [{ field: 'items', message: 'too many' }]);
  const seen = new Set<string>();
  for (const [i, it] of items.entries()) {
    if (seen.has(it.key))
      throw badRequest(`Duplicate key "${it.key}"`, [{ field: `items.${i}.key`, message: 'duplicate' }]);
    seen.add(it.key);
    if (it.value !== null && Buffer.byteLength(it.value) > ENV_MAX_VALUE)
      throw badRequest(`Value of "${it.key}" is larger than ${ENV_MAX_VALUE} bytes`, [
        { field: `items.${i}.value`, message: 'too large' },
      ]);
  }
  requireSealer(sealer);
  const { set } = await writeEnv(db, sealer, appId, ifMatch, async (tx, rows) => {
    const existing = new Map(rows.map((r) => [r.key, r]));
    const next = items.map((it, i) => {
      const old = existing.get(it.key);
      if (it.value === null && !old)
        throw badRequest(`"${it.key}" has no stored value to keep: give a value`, [
          { field: `items.${i}.value`, message: 'required for a new key' },
        ]);
      const secret = it.secret ?? (old ? old.secret === 1 : true);
      const sealed = it.value === null ? old!.sealed : sealer.seal(it.value, envBinding(appId, it.key));
      return { app_id: appId, key: it.key, secret: secret ? 1 : 0, sealed };
    });
    await tx.deleteFrom('app_env').where('app_id', '=', appId).execute();
    if (next.length) await tx.insertInto('app_env').values(next).execute();
  });
  return set;
}

/** Sets one variable; `secret` defaults to the stored key's flag, or true for a new key. */
export async function setEnvVar(
  db: Db,
  sealer: Sealer,
  appId: string,
  input: { key: string; value: string; secret?: boolean },
  ifMatch: string | null,
): Promise<{ created: boolean; item: EnvItem; etag: string }> {
  if (Buffer.byteLength(input.value) > ENV_MAX_VALUE)
    throw badRequest(`Value of "${input.key}" is larger than ${ENV_MAX_VALUE} bytes`, [
      { field: 'value', message: 'too large' },
    ]);
  requireSealer(sealer);
  const { result: created, set } = await writeEnv(db, sealer, appId, ifMatch, async (tx, rows) => {
    const old = rows.find((r) => r.key === input.key);
    if (!old && rows.length >= ENV_MAX_VARS)
      throw badRequest(`At most ${ENV_MAX_VARS} variables`, [{ field: 'key', message: 'too many' }]);
    const secret = (input.secret ?? (old ? old.secret === 1 : true)) ? 1 : 0;
    const sealed = sealer.seal(input.value, envBinding(appId, input.key));
    await tx
      .insertInto('app_env')
      .values({ app_id: appId, key: input.key, secret, sealed })
      .onConflict((c) => c.columns(['app_id', 'key']).doUpdateSet({ secret, sealed }))
      .execute();
    return !old;
  });
  return { created, item: set.items.find((i) => i.key === input.key)!, etag: set.etag };
}

/** Removes one variable (404 when the app has no such key); answers the set's new ETag. */
export async function removeEnvVar(
  db: Db,
  sealer: Sealer,
  appId: string,
  key: string,
  ifMatch: string | null,
): Promise<string> {
  const { set } = await writeEnv(db, sealer, appId, ifMatch, async (tx) => {
    const r = await tx
      .deleteFrom('app_env')
      .where('app_id', '=', appId)
      .where('key', '=', key)
      .executeTakeFirst();
    if (Number(r.numDeletedRows) === 0) throw notFound(`No variable "${key}"`);
  });
  return set.etag;
}
