// The cluster registry's password, sealed in `settings` (listed in lib/instance/sealed-rows.ts, so a
// master key rotation re-seals it). Written once: the first writer wins, everyone reads its value.
import type { Db } from '../db/index.js';
import { REGISTRY_PASSWORD_SETTING } from '../crypto/bindings.js';

export async function readSealedRegistryPassword(db: Db): Promise<string | null> {
  const r = await db
    .selectFrom('settings')
    .select('value')
    .where('key', '=', REGISTRY_PASSWORD_SETTING)
    .executeTakeFirst();
  return r?.value ?? null;
}

/** Saves it unless one is there already; answers the one stored. */
export async function saveSealedRegistryPassword(db: Db, sealed: string): Promise<string> {
  await db
    .insertInto('settings')
    .values({ key: REGISTRY_PASSWORD_SETTING, value: sealed })
    .onConflict((c) => c.column('key').doNothing())
    .execute();
  return (await readSealedRegistryPassword(db))!;
}
