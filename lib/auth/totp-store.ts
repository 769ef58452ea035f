// Every query of second factors: the TOTP columns of an operator's row and their recovery codes
// (stored as keyed digests; totp.ts makes and checks codes, these only read and write rows).
import type { Db } from '../db/index.js';

/** Codes whose digest does not start with `prefix` (stored by older builds as a bare SHA-256). */
export function recoveryRowsWithout(db: Db, prefix: string) {
  return db
    .selectFrom('recovery_codes')
    .select(['id', 'code_hash'])
    .where('code_hash', 'not like', `${prefix}%`)
    .execute();
}

/** Replaces a code's digest while it is still `old`. */
export async function rehashRecoveryRow(db: Db, id: number, old: string, next: string): Promise<void> {
  await db
    .updateTable('recovery_codes')
    .set({ code_hash: next })
    .where('id', '=', id)
    .where('code_hash', '=', old)
    .execute();
}

/** The codes of an operator become these digests (their old ones go). */
async function putRecoveryRows(tx: Db, userId: string, codeHashes: string[]): Promise<void> {
  await tx.deleteFrom('recovery_codes').where('user_id', '=', userId).execute();
  await tx
    .insertInto('recovery_codes')
    .values(codeHashes.map((h) => ({ user_id: userId, code_hash: h, used_at: null })))
    .execute();
}

/** TOTP on with its secret (sealed) and last step, and fresh recovery codes, in one transaction. */
export async function turnOnTotp(
  db: Db,
  userId: string,
  t: { sealedSecret: string; step: number; at: string; codeHashes: string[] },
): Promise<void> {
  await db.transaction().execute(async (tx) => {
    await tx
      .updateTable('users')
      .set({
        totp_enabled: 1,
        totp_secret: t.sealedSecret,
        totp_pending: null,
        totp_last_step: t.step,
        updated_at: t.at,
      })
      .where('id', '=', userId)
      .execute();
    await putRecoveryRows(tx, userId, t.codeHashes);
  });
}

/** Fresh recovery codes, in one transaction with the check that TOTP is on; false when it is not. */
export async function replaceRecoveryRows(db: Db, userId: string, codeHashes: string[]): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    const user = await tx
      .selectFrom('users')
      .select('totp_enabled')
      .where('id', '=', userId)
      .executeTakeFirst();
    if (!user || user.totp_enabled !== 1) return false;
    await putRecoveryRows(tx, userId, codeHashes);
    return true;
  });
}

export function secondFactorRow(db: Db, userId: string) {
  return db
    .selectFrom('users')
    .select(['totp_enabled', 'totp_secret', 'totp_last_step'])
    .where('id', '=', userId)
    .executeTakeFirst();
}

/** Marks an unused recovery code used; false when there is none with this digest. */
export async function burnRecoveryCode(
  db: Db,
  userId: string,
  codeHash: string,
  at: string,
): Promise<boolean> {
  const r = await db
    .updateTable('recovery_codes')
    .set({ used_at: at })
    .where('user_id', '=', userId)
    .where('code_hash', '=', codeHash)
    .where('used_at', 'is', null)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Records `step` as the last one used, only past `last` (two requests with one code: one wins). */
export async function advanceTotpStep(
  db: Db,
  userId: string,
  last: number | null,
  step: number,
): Promise<boolean> {
  let q = db.updateTable('users').set({ totp_last_step: step }).where('id', '=', userId);
  q = last === null ? q.where('totp_last_step', 'is', null) : q.where('totp_last_step', '<', step);
  const r = await q.executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** TOTP off: secret, pending secret, last step and recovery codes gone (run inside the caller's transaction). */
export async function clearTotp(tx: Db, userId: string, at: string): Promise<void> {
  await tx
    .updateTable('users')
    .set({
      totp_enabled: 0,
      totp_secret: null,
      totp_pending: null,
      totp_last_step: null,
      updated_at: at,
    })
    .where('id', '=', userId)
    .execute();
  await tx.deleteFrom('recovery_codes').where('user_id', '=', userId).execute();
}

/** TOTP off, in a transaction of its own. */
export async function turnOffTotp(db: Db, userId: string, at: string): Promise<void> {
  await db.transaction().execute((tx) => clearTotp(tx, userId, at));
}
