// Every query of the registries table.
import type { Db } from '../db/index.js';
import { isUniqueViolation } from '../db/index.js';
import type { RegistryTable } from '../db/schema.js';
import { conflict, notFound } from '../http/errors.js';

const taken = (host: string) =>
  conflict(`Credentials for registry ${host} are already stored; change those instead`);

export async function listRegistryRows(db: Db): Promise<RegistryTable[]> {
  return db.selectFrom('registries').selectAll().orderBy('host', 'asc').execute();
}

export async function getRegistryRow(db: Db, id: string): Promise<RegistryTable> {
  const r = await db.selectFrom('registries').selectAll().where('id', '=', id).executeTakeFirst();
  if (!r) throw notFound('No such registry');
  return r;
}

export async function findRegistryByHost(db: Db, host: string): Promise<RegistryTable | undefined> {
  return db.selectFrom('registries').selectAll().where('host', '=', host).executeTakeFirst();
}

export async function insertRegistryRow(db: Db, row: RegistryTable): Promise<void> {
  try {
    await db.insertInto('registries').values(row).execute();
  } catch (e) {
    if (isUniqueViolation(e)) throw taken(row.host);
    throw e;
  }
}

export async function updateRegistryRow(
  db: Db,
  id: string,
  patch: Partial<Pick<RegistryTable, 'host' | 'username' | 'password_sealed' | 'updated_at'>>,
): Promise<void> {
  try {
    const r = await db.updateTable('registries').set(patch).where('id', '=', id).executeTakeFirst();
    if (Number(r.numUpdatedRows) !== 1) throw notFound('No such registry');
  } catch (e) {
    if (isUniqueViolation(e)) throw taken(patch.host ?? '');
    throw e;
  }
}

export async function deleteRegistryRow(db: Db, id: string): Promise<void> {
  const r = await db.deleteFrom('registries').where('id', '=', id).executeTakeFirst();
  if (Number(r.numDeletedRows) !== 1) throw notFound('No such registry');
}

export async function touchRegistry(db: Db, id: string, at: string): Promise<void> {
  await db.updateTable('registries').set({ last_used_at: at }).where('id', '=', id).execute();
}
