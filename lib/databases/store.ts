// Rows of managed databases that provisioning touches after its request has answered.
import type { Db } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { envBinding } from '../apps/env.js';

/**
 * A database whose provisioning failed leaves no connection URL behind: the app's variable it
 * reserved is removed while it still holds that URL (an operator who set it since keeps theirs).
 */
export async function dropConnectionVar(
  db: Db,
  sealer: Sealer,
  appId: string,
  key: string,
  url: string,
): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const row = await tx
      .selectFrom('app_env')
      .select(['sealed'])
      .where('app_id', '=', appId)
      .where('key', '=', key)
      .executeTakeFirst();
    if (!row) return false;
    let value: string | null = null;
    try {
      value = sealer.open(row.sealed, envBinding(appId, key));
    } catch {
      return false;
    }
    if (value !== url) return false;
    await tx.deleteFrom('app_env').where('app_id', '=', appId).where('key', '=', key).execute();
    return true;
  });
}
