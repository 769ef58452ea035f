// The instance's key-value settings (the `settings` table): each area names its own keys and
// says what their values mean; the reads and writes are these.
import type { Db } from './index.js';

/** The value stored under `key`; null when none is. */
export async function readSetting(db: Db, key: string): Promise<string | null> {
  const r = await db.selectFrom('settings').select('value').where('key', '=', key).executeTakeFirst();
  return r?.value ?? null;
}

/** Stores `value` under `key`, replacing what was there. */
export async function writeSetting(db: Db, key: string, value: string): Promise<void> {
  await db
    .insertInto('settings')
    .values({ key, value })
    .onConflict((c) => c.column('key').doUpdateSet({ value }))
    .execute();
}

/** Stores `value` unless a value is there already; answers the value that is now stored. */
export async function settingOnce(db: Db, key: string, value: string): Promise<string> {
  await db
    .insertInto('settings')
    .values({ key, value })
    .onConflict((c) => c.doNothing())
    .execute();
  return (await readSetting(db, key))!;
}

/** Replaces the value only while it is still `expected` (a concurrent writer that came first wins). */
export async function replaceSetting(db: Db, key: string, expected: string, value: string): Promise<void> {
  await db
    .updateTable('settings')
    .set({ value })
    .where('key', '=', key)
    .where('value', '=', expected)
    .execute();
}
