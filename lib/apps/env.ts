// App environment: every value is sealed at rest and bound to its app and key; secret ones are
// also redacted when listed. Values are kept byte for byte (quotes, $, #, =, newlines, unicode).
import type { Db } from '../db/index.js';
import { requireSealer, type Sealer } from '../crypto/seal.js';
import { badRequest } from '../http/errors.js';
import { ENV_MAX_VALUE, ENV_MAX_VARS } from './model.js';

export const envBinding = (appId: string, key: string) => `app:${appId}:env:${key}`;

export interface EnvItem {
  key: string;
  secret: boolean;
  value: string | null;
}

export async function listEnv(db: Db, sealer: Sealer, appId: string): Promise<EnvItem[]> {
  const rows = await db.selectFrom('app_env').selectAll().where('app_id', '=', appId).orderBy('key').execute();
  return rows.map((r) => ({ key: r.key, secret: r.secret === 1, value: r.secret === 1 ? null : sealer.open(r.sealed, envBinding(appId, r.key)) }));
}

/** The plain values, for containers and builds only: never for an API answer or a log. */
export async function resolveEnv(db: Db, sealer: Sealer, appId: string): Promise<Record<string, string>> {
  const rows = await db.selectFrom('app_env').selectAll().where('app_id', '=', appId).execute();
  if (rows.length) requireSealer(sealer);
  const out: Record<string, string> = {};
  for (const r of rows) out[r.key] = sealer.open(r.sealed, envBinding(appId, r.key));
  return out;
}

export async function revealEnv(db: Db, sealer: Sealer, appId: string, key: string): Promise<string | null> {
  const r = await db.selectFrom('app_env').selectAll().where('app_id', '=', appId).where('key', '=', key).executeTakeFirst();
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
export async function replaceEnv(db: Db, sealer: Sealer, appId: string, items: EnvInput[]): Promise<EnvItem[]> {
  if (items.length > ENV_MAX_VARS) throw badRequest(`At most ${ENV_MAX_VARS} variables`, [{ field: 'items', message: 'too many' }]);
  const seen = new Set<string>();
  for (const [i, it] of items.entries()) {
    if (seen.has(it.key)) throw badRequest(`Duplicate key "${it.key}"`, [{ field: `items.${i}.key`, message: 'duplicate' }]);
    seen.add(it.key);
    if (it.value !== null && Buffer.byteLength(it.value) > ENV_MAX_VALUE)
      throw badRequest(`Value of "${it.key}" is larger than ${ENV_MAX_VALUE} bytes`, [{ field: `items.${i}.value`, message: 'too large' }]);
  }
  requireSealer(sealer);
  await db.transaction().execute(async (tx) => {
    const existing = new Map((await tx.selectFrom('app_env').selectAll().where('app_id', '=', appId).execute()).map((r) => [r.key, r]));
    const rows = items.map((it, i) => {
      const old = existing.get(it.key);
      if (it.value === null && !old) throw badRequest(`"${it.key}" has no stored value to keep: give a value`, [{ field: `items.${i}.value`, message: 'required for a new key' }]);
      const secret = it.secret ?? (old ? old.secret === 1 : true);
      const sealed = it.value === null ? old!.sealed : sealer.seal(it.value, envBinding(appId, it.key));
      return { app_id: appId, key: it.key, secret: secret ? 1 : 0, sealed };
    });
    await tx.deleteFrom('app_env').where('app_id', '=', appId).execute();
    if (rows.length) await tx.insertInto('app_env').values(rows).execute();
  });
  return listEnv(db, sealer, appId);
}
