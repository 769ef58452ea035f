// A throwaway PostgreSQL 15 server for tests: Debian's postgresql-15 binaries, one server per test
// process (started on first use, stopped at exit), a data and socket directory of its own on a
// free loopback port, trust authentication on loopback only. Each test app gets a database of
// its own (freshDatabase), so tests never see each other's rows.
//
// The server refuses to run as root: as root, initdb and pg_ctl run as the `postgres` user
// (runuser), in directories that user owns.
import { execFileSync, execFile } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { randomBytes } from 'node:crypto';
import type { TestContext } from 'node:test';
import pg from 'pg';
import { freePort } from './net.js';
import { missing } from './ci.js';

const run = promisify(execFile);
const BIN = process.env.SVC_TEST_PG_BIN ?? '/usr/lib/postgresql/15/bin';
const REQUIRE = 'SVC_REQUIRE_POSTGRES';

/** Whether this run asks every test app for PostgreSQL (the suite's second pass). */
export const onPostgres = () => process.env.SVC_TEST_DATABASE === 'postgres';

export interface PgServer {
  port: number;
  /** A URL of the server's `postgres` database. */
  adminUrl: string;
}

let started: Promise<PgServer> | null = null;

/** Why no server can be started here, or null. */
export function postgresMissing(): string | null {
  if (!existsSync(join(BIN, 'initdb')) || !existsSync(join(BIN, 'pg_ctl')))
    return `PostgreSQL's initdb and pg_ctl are not in ${BIN} (Debian: apt-get install postgresql-15)`;
  return null;
}

/** The gate: true when a server can be started; else a loud skip, or a failure under CI. */
export function needPostgres(t: Pick<TestContext, 'name' | 'skip'>): boolean {
  const problem = postgresMissing();
  return problem === null || missing(t, problem, REQUIRE);
}

/** The process's server, started on first call. */
export function postgres(): Promise<PgServer> {
  return (started ??= start());
}

async function start(): Promise<PgServer> {
  const problem = postgresMissing();
  if (problem) throw new Error(problem);
  const root = mkdtempSync(join(tmpdir(), 'svc-pg-'));
  const data = join(root, 'data');
  const sockets = join(root, 'run');
  const asRoot = process.getuid?.() === 0;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }).trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }).trim());
    chownSync(root, uid, gid);
  }
  const as = (bin: string, args: string[]) =>
    asRoot ? run('runuser', ['-u', 'postgres', '--', join(BIN, bin), ...args]) : run(join(BIN, bin), args);
  await run(asRoot ? 'runuser' : 'mkdir', asRoot ? ['-u', 'postgres', '--', 'mkdir', sockets] : [sockets]);
  await as('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync', '-E', 'UTF8', '--no-locale']);
  const port = await freePort();
  // Durability is not what a test checks: no fsync, no full-page writes.
  const options = [
    `-p ${port}`,
    `-k ${sockets}`,
    '-c listen_addresses=127.0.0.1',
    '-c fsync=off',
    '-c synchronous_commit=off',
    '-c full_page_writes=off',
    '-c max_connections=200',
  ].join(' ');
  await as('pg_ctl', ['-D', data, '-o', options, '-l', join(root, 'log'), '-w', '-s', 'start']);
  process.once('exit', () => {
    // Synchronous: nothing else runs at exit. Immediate: the databases are thrown away.
    try {
      const args = ['-D', data, '-m', 'immediate', '-s', 'stop'];
      if (asRoot) execFileSync('runuser', ['-u', 'postgres', '--', join(BIN, 'pg_ctl'), ...args]);
      else execFileSync(join(BIN, 'pg_ctl'), args);
    } catch {
      // Already gone.
    }
    rmSync(root, { recursive: true, force: true });
  });
  return { port, adminUrl: `postgres://postgres@127.0.0.1:${port}/postgres` };
}

/** A new, empty database on the process's server; its URL. */
export async function freshDatabase(): Promise<string> {
  const server = await postgres();
  const name = `svc_${randomBytes(6).toString('hex')}`;
  const client = new pg.Client({ connectionString: server.adminUrl });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  return `postgres://postgres@127.0.0.1:${server.port}/${name}`;
}

/** SVC_DATABASE_URL of a fresh database when the run is on PostgreSQL, else nothing (SQLite). */
export async function testDatabaseVars(): Promise<Record<string, string>> {
  return onPostgres() ? { SVC_DATABASE_URL: await freshDatabase() } : {};
}
