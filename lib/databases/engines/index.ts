// The engines table: every engine a managed database can be, one file each (engine.ts says what
// an engine file holds). Provisioning (../index.ts), backups and previews reach an engine only
// through here, and never ask which engine a row is. A new engine is a new file, its name in
// DB_ENGINES (../model.ts) and its entry below; the type of the table makes the two agree.
import type { Readable } from 'node:stream';
import type { Services } from '../../http/handler.js';
import type { Config } from '../../config.js';
import type { AppDatabaseTable } from '../../db/schema.js';
import { dbBinding } from '../../crypto/bindings.js';
import { DB_ENGINES, type DbEngine } from '../model.js';
import { assertRunning } from '../container.js';
import { failIfNonZero, type DatabaseEngine, type EngineSpec, type Secrets, type Target } from './engine.js';
import { verifyInScratch } from './scratch.js';
import { postgres } from './postgres.js';
import { mariadb } from './mariadb.js';
import { redis } from './redis.js';

export type { DatabaseEngine, EngineSpec, Secrets, Target } from './engine.js';
export { sweepScratchServers } from './scratch.js';

export const ENGINES: Readonly<Record<DbEngine, DatabaseEngine>> = { postgres, mariadb, redis };

export const isEngine = (name: string): name is DbEngine => (DB_ENGINES as readonly string[]).includes(name);

/** The engine of a row (a name the table lacks is a row this version cannot serve). */
export function engineOf(name: string): DatabaseEngine {
  if (!isEngine(name)) throw new Error(`unknown database engine "${name.slice(0, 40)}"`);
  return ENGINES[name];
}

export function listEngines(): Array<Pick<EngineSpec, 'engine' | 'versions' | 'default_version' | 'images'>> {
  return DB_ENGINES.map((e) => {
    const s = ENGINES[e].spec;
    return { engine: s.engine, versions: s.versions, default_version: s.default_version, images: s.images };
  });
}

/** The reference actually run: the engine's pinned one, unless SVC_IMAGE_MAP maps it elsewhere. */
export function imageOf(
  config: Pick<Config, 'imageMap'>,
  row: Pick<AppDatabaseTable, 'engine' | 'version'>,
): string {
  const ref = engineOf(row.engine).spec.images[row.version]!;
  return config.imageMap[ref] ?? ref;
}

export function dbSecrets(deps: Pick<Services, 'sealer'>, r: AppDatabaseTable): Secrets {
  return JSON.parse(deps.sealer.open(r.password_sealed, dbBinding(r.id))) as Secrets;
}

/** What the engine's clients connect to in the database's own container. */
export function targetOf(deps: Pick<Services, 'sealer'>, row: AppDatabaseTable): Target {
  const s = dbSecrets(deps, row);
  return {
    container: row.container,
    name: row.name,
    username: row.username,
    password: s.password,
    root: s.root,
  };
}

/** What a backup needs: Docker, the data directory (spools), the sealer (the database's secrets). */
export type DumpDeps = Pick<Services, 'engine' | 'config' | 'sealer'>;

/** The dump of a running database as a byte stream; `done` rejects with the client's reason. */
export async function dumpDatabase(
  deps: DumpDeps,
  row: AppDatabaseTable,
): Promise<{ stream: Readable; done: Promise<void> }> {
  const def = engineOf(row.engine);
  const t = targetOf(deps, row);
  await assertRunning(deps.engine, t.container);
  const h = await def.dump(deps, t);
  const done = h.done.then((r) => failIfNonZero(def.dumpClient, r));
  done.catch(() => {});
  return { stream: h.stdout, done };
}

/** Feeds the (decompressed) dump back into the database. */
export function restoreDatabase(
  deps: DumpDeps,
  row: AppDatabaseTable,
  dump: () => Promise<Readable>,
): Promise<void> {
  return engineOf(row.engine).restore(deps, targetOf(deps, row), dump);
}

/** Restores the dump into a scratch server of the database's engine and version and checks it. */
export function verifyDatabase(
  deps: Pick<Services, 'engine' | 'config'>,
  row: AppDatabaseTable,
  dump: () => Promise<Readable>,
): Promise<string> {
  return verifyInScratch(deps, engineOf(row.engine), imageOf(deps.config, row), row, dump);
}
