import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import { ensurePrivateDir } from '../util/private-dir.js';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Kysely as KyselyDb, MigrationProvider } from 'kysely';
import { Kysely, Migrator, TransactionalSqliteDialect } from './kysely.js';
import type { Database } from './schema.js';
import { migrations } from './migrations/index.js';

// ctx.env of every handler carries it (the service registry of lib/http/handler.ts).
declare module '../http/handler.js' {
  interface Services {
    db: Db;
  }
}

export type Db = KyselyDb<Database>;
export type { Database } from './schema.js';

const staticProvider: MigrationProvider = { getMigrations: async () => migrations };

/** A database the service refuses to run on (unreadable, damaged, from a newer version). */
export class DatabaseError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'DatabaseError';
  }
}

const LEFT_AS_IS =
  'it was left as it is: restore it from a backup, or move it away to start with an empty one';

/** Opens `<dataDir>/svc.db` (or `:memory:`), with WAL, a busy timeout and foreign keys on. */
export function openDb(dataDir: string | ':memory:'): Db {
  let file = ':memory:';
  if (dataDir !== ':memory:') {
    ensurePrivateDir(dataDir);
    file = join(dataDir, 'svc.db');
    // SQLite gives the -wal and -shm files the database file's mode: create it 0600 first.
    closeSync(openSync(file, 'a', 0o600));
    for (const f of [file, `${file}-wal`, `${file}-shm`]) if (existsSync(f)) chmodSync(f, 0o600);
  }
  const raw = new BetterSqlite3(file);
  try {
    // Reads the header and the schema first: a file that is not a database is refused before
    // anything (the journal mode included) is written to it.
    raw.prepare('select count(*) from sqlite_master').get();
    raw.pragma('journal_mode = WAL');
  } catch (e) {
    raw.close();
    throw new DatabaseError(
      `the database ${file} cannot be opened (${(e as Error).message}); ${LEFT_AS_IS}`,
      { cause: e },
    );
  }
  raw.pragma('busy_timeout = 5000');
  raw.pragma('foreign_keys = ON');
  raw.pragma('synchronous = NORMAL');
  const cached = withStatementCache(raw);
  const db = new Kysely<Database>({ dialect: new TransactionalSqliteDialect({ database: cached }) });
  rawHandles.set(db, { raw, hot: new Map() });
  return db;
}

const rawHandles = new WeakMap<
  object,
  { raw: BetterSqlite3.Database; hot: Map<string, BetterSqlite3.Statement> }
>();

/**
 * A cached prepared statement on the same connection, for the few per-request hot paths (health
 * ping, credential lookup) where Kysely's asynchronous query pipeline costs more than the query.
 * Everything else goes through Kysely. `sqlText` must be a constant: statements are kept for good.
 */
export function hotStatement(db: Db, sqlText: string): BetterSqlite3.Statement {
  const handle = rawHandles.get(db);
  if (!handle) throw new Error('hotStatement needs a database opened with openDb');
  // A handful of fixed SQL texts: kept for the life of the connection, no eviction bookkeeping.
  let stmt = handle.hot.get(sqlText);
  if (!stmt) handle.hot.set(sqlText, (stmt = handle.raw.prepare(sqlText)));
  return stmt;
}

/**
 * The connection itself, for the few writers that batch thousands of rows in one synchronous
 * transaction (the request and host time series), where Kysely's per-query promise dominates.
 */
export function rawConnection(db: Db): BetterSqlite3.Database {
  const handle = rawHandles.get(db);
  if (!handle) throw new Error('rawConnection needs a database opened with openDb');
  return handle.raw;
}

const STATEMENT_CACHE = 256;

/**
 * Kysely prepares every query afresh; preparing costs more than running a small indexed lookup.
 * Statements are reused by SQL text (values are bound per call), with a bounded table.
 */
function withStatementCache(raw: BetterSqlite3.Database) {
  const cache = new Map<string, BetterSqlite3.Statement>();
  return {
    close: () => raw.close(),
    prepare(sqlText: string) {
      let stmt = cache.get(sqlText);
      if (stmt) {
        cache.delete(sqlText);
      } else {
        stmt = raw.prepare(sqlText);
        if (cache.size >= STATEMENT_CACHE) cache.delete(cache.keys().next().value!);
      }
      cache.set(sqlText, stmt);
      return stmt;
    },
  };
}

/**
 * Brings the schema to the latest migration, all pending ones in one transaction (see
 * TransactionalSqliteDialect): a failure rolls every one of them back. A database written by a
 * newer version, or too damaged to read, is refused.
 */
export async function migrate(db: Db): Promise<void> {
  const { error, results } = await new Migrator({ db, provider: staticProvider }).migrateToLatest();
  if (!error) return;
  const where = rawHandles.get(db)?.raw.name ?? 'the database';
  const reason = error instanceof Error ? error.message : String(error);
  const failed = results?.find((r) => r.status === 'Error')?.migrationName;
  const newer = /previously executed migration (\S+) is missing/.exec(reason);
  if (failed)
    throw new DatabaseError(
      `migration ${failed} of ${where} failed, and every migration of this boot was rolled back (${reason}); ${LEFT_AS_IS}`,
      { cause: error },
    );
  if (newer)
    throw new DatabaseError(
      `${where} was written by a newer version of svc (its migration ${newer[1]} is unknown to this one); ${LEFT_AS_IS}`,
      { cause: error },
    );
  throw new DatabaseError(`${where} cannot be migrated (${reason}); ${LEFT_AS_IS}`, { cause: error });
}

/** A database round trip (synchronous: better-sqlite3 answers in place). */
export function ping(db: Db): void {
  hotStatement(db, 'select 1 as ok').get();
}

export const nowIso = (now = Date.now()) => new Date(now).toISOString();
