// Every query of deploy hooks: one per app, found by the SHA-256 of its URL's token.
import type { Db } from '../db/index.js';
import type { DeployHookTable } from '../db/schema.js';

export async function hookOfApp(db: Db, appId: string): Promise<DeployHookTable | undefined> {
  return db.selectFrom('deploy_hooks').selectAll().where('app_id', '=', appId).executeTakeFirst();
}

export async function hookByTokenHash(db: Db, hash: string): Promise<DeployHookTable | undefined> {
  return db.selectFrom('deploy_hooks').selectAll().where('token_hash', '=', hash).executeTakeFirst();
}

/** Puts the app's one hook in place of any older one (whose URL stops working now). */
export async function replaceHook(db: Db, row: DeployHookTable): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx.deleteFrom('deploy_hooks').where('app_id', '=', row.app_id).execute();
    await tx.insertInto('deploy_hooks').values(row).execute();
  });
}

export async function deleteHook(db: Db, appId: string): Promise<boolean> {
  const r = await db.deleteFrom('deploy_hooks').where('app_id', '=', appId).executeTakeFirst();
  return Number(r.numDeletedRows) > 0;
}

export async function touchHook(db: Db, id: string, at: string): Promise<void> {
  await db.updateTable('deploy_hooks').set({ last_used_at: at }).where('id', '=', id).execute();
}
