import { chmodSync, closeSync, existsSync, openSync } from 'node:fs';
import { ensurePrivateDir } from '../util/private-dir.js';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import type { Kysely as KyselyDb, MigrationProvider } from 'kysely';
import { createRequire } from 'node:module';
import type pg from 'pg';
import {
  Kysely,
  Migrator,
  PortablePostgresDialect,
  dialectOf,
  TransactionalSqliteDialect,
  CompiledQuery,
  sql,
} from './kysely.js';
import type { Maybe } from '../util/maybe.js';
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

export { dialectOf, type Dialect } from './kysely.js';

/** True for a postgres:// (or postgresql://) SVC_DATABASE_URL. */
export const isPostgresUrl = (url: string) => /^postgres(ql)?:\/\//i.test(url);

/**
 * The control plane's database: PostgreSQL when `databaseUrl` is set, else the SQLite file in
 * `dataDir`. The same migrations and repositories serve both.
 */
export function openDatabase(config: { dataDir: string; databaseUrl?: string | null }): Db {
  if (!config.databaseUrl) return openDb(config.dataDir);
  const db = openPostgres(config.databaseUrl);
  seriesDirs.set(db, config.dataDir);
  return db;
}

const seriesDirs = new WeakMap<object, string>();
const seriesHandles = new WeakMap<object, BetterSqlite3.Database>();

// The request, host and resource time series as migrations 0006, 0009 and 0025 leave them.
const SERIES_SCHEMA = `
create table if not exists request_series (res integer not null, app_id text not null, service text not null,
  t integer not null, requests integer not null, errors_4xx integer not null, errors_5xx integer not null,
  bytes_out integer not null, hist blob not null,
  constraint request_series_pk primary key (res, app_id, service, t)) without rowid;
create index if not exists request_series_age on request_series (res, t);
create table if not exists host_vitals (res integer not null, t integer not null, samples integer not null,
  cpu_sum real not null, load1_sum real not null, mem_used_sum integer not null, mem_total_sum integer not null,
  disk_used_sum integer not null, disk_total_sum integer not null,
  constraint host_vitals_pk primary key (res, t)) without rowid;
create table if not exists resource_series (res integer not null, app_id text not null, service text not null,
  t integer not null, samples integer not null, cpu_sum real not null, mem_sum real not null,
  mem_limit integer not null, restarts integer not null,
  constraint resource_series_pk primary key (res, app_id, service, t)) without rowid;
create index if not exists resource_series_age on resource_series (res, t);`;

/**
 * The connection of the request and host time series (lib/series). On SQLite, the database's own.
 * With PostgreSQL, a SQLite file beside the host's other state, `<dataDir>/series.db`: the series
 * are this host's own measurements, written thousands of rows per synchronous batch, and read
 * back per chart; a network round trip per row would cost more than the rest of the work.
 */
export function seriesConnection(db: Db): BetterSqlite3.Database {
  const own = rawHandles.get(db);
  if (own) return own.raw;
  let raw = seriesHandles.get(db);
  if (!raw) {
    const dir = seriesDirs.get(db);
    if (dir === undefined) throw new Error('seriesConnection needs a database opened with openDatabase');
    let file = ':memory:';
    if (dir !== ':memory:') {
      ensurePrivateDir(dir);
      file = join(dir, 'series.db');
      closeSync(openSync(file, 'a', 0o600));
    }
    raw = new BetterSqlite3(file);
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = NORMAL');
    raw.exec(SERIES_SCHEMA);
    seriesHandles.set(db, raw);
    const destroy = db.destroy.bind(db);
    db.destroy = async () => {
      raw!.close();
      await destroy();
    };
  }
  return raw;
}

// The PostgreSQL driver is loaded only by an instance that uses it (SVC_DATABASE_URL): an instance
// on SQLite does not hold it in memory.
let pgModule: typeof pg | undefined;
const loadPg = (): typeof pg => (pgModule ??= createRequire(import.meta.url)('pg') as typeof pg);

// int8 (count(*), bigint columns) and numeric (sum, avg) come back as strings by default, since
// they can exceed 2^53; the values kept here are counts, byte sizes and times, far below that,
// and SQLite answers them as numbers. Per pool, so nothing else in the process changes.
const PG_NUMBER_TYPES = new Set([20, 1700]);
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    PG_NUMBER_TYPES.has(oid) && format !== 'binary'
      ? (v: string) => Number(v)
      : loadPg().types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** A pool on `url`; nothing is asked of the server until the first query (migrate, at boot). */
export function openPostgres(url: string): Db {
  const pool = new (loadPg().Pool)({ connectionString: url, max: 10, types: pgTypes });
  // An idle client losing its server is reported here; the next query gets a new connection.
  pool.on('error', () => {});
  const db = new Kysely<Database>({ dialect: new PortablePostgresDialect({ pool }) });
  pgPools.set(db, pool);
  return db;
}

const pgPools = new WeakMap<object, pg.Pool>();

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
  if (!handle) throw new Error('hotStatement needs a SQLite database opened with openDb');
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
  if (!handle) throw new Error('rawConnection needs a SQLite database opened with openDb');
  return handle.raw;
}

const pgTexts = new Map<string, string>();
/** `?` placeholders as PostgreSQL's `$1, $2...` (the hot texts are constants with no `?` in literals). */
function pgText(sqlText: string): string {
  let t = pgTexts.get(sqlText);
  if (t === undefined) {
    let n = 0;
    pgTexts.set(sqlText, (t = sqlText.replace(/\?/g, () => `$${++n}`)));
  }
  return t;
}

/**
 * One row of a hot statement: in place on SQLite (a cached prepared statement), a promise on
 * PostgreSQL, whose driver is asynchronous anyway. `sqlText` is a constant with `?` parameters.
 */
export function hotGet<T>(db: Db, sqlText: string, ...params: unknown[]): Maybe<T | undefined> {
  // The SQLite handle first: the per-request path pays one map lookup, as hotStatement does.
  if (rawHandles.has(db)) return hotStatement(db, sqlText).get(...params) as T | undefined;
  return pgQuery<T>(db, sqlText, params).then((r) => r.rows[0]);
}

/** A hot write (see hotGet). */
export function hotRun(db: Db, sqlText: string, ...params: unknown[]): Maybe<void> {
  if (rawHandles.has(db)) {
    hotStatement(db, sqlText).run(...params);
    return;
  }
  return pgQuery(db, sqlText, params).then(() => undefined);
}

function pgQuery<T>(db: Db, sqlText: string, params: unknown[]) {
  if (dialectOf(db) !== 'postgres')
    throw new Error('hotGet and hotRun need a database opened with openDatabase');
  return db.executeQuery<T>(CompiledQuery.raw(pgText(sqlText), params));
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
  const where =
    dialectOf(db) === 'postgres'
      ? 'the PostgreSQL database'
      : (rawHandles.get(db)?.raw.name ?? 'the database');
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

/** A database round trip (synchronous on SQLite: better-sqlite3 answers in place). */
export function ping(db: Db): void | Promise<void> {
  if (dialectOf(db) === 'postgres') return sql`select 1 as ok`.execute(db).then(() => undefined);
  hotStatement(db, 'select 1 as ok').get();
}

/**
 * For `.$call(lockedOn(tx))` on a select inside a transaction that reads, decides, then writes:
 * PostgreSQL runs writers side by side, so the rows read are locked until the transaction ends.
 * SQLite has one writer at a time already (and has no FOR UPDATE).
 */
export function lockedOn(db: { getExecutor(): { adapter: unknown } }) {
  return <QB extends { forUpdate(): QB }>(qb: QB): QB => (dialectOf(db) === 'postgres' ? qb.forUpdate() : qb);
}

/** A unique or primary key refused the row, on either database (PostgreSQL: SQLSTATE 23505). */
export function isUniqueViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return code === 'SQLITE_CONSTRAINT_UNIQUE' || code === 'SQLITE_CONSTRAINT_PRIMARYKEY' || code === '23505';
}

/** Any integrity constraint (unique, foreign key, check, not null) refused the row. */
export function isConstraintViolation(e: unknown): boolean {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_CONSTRAINT') || /^23\d{3}$/.test(code));
}

export const nowIso = (now = Date.now()) => new Date(now).toISOString();
