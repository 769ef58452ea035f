// PostgreSQL: the official image, its clients (pg_dump's custom format, pg_restore, psql) run in
// the database's own container over TCP, the password in the client's environment.
import type { Readable } from 'node:stream';
import { execCapture, execStream, type ExecHandle } from '../exec.js';
import {
  failIfNonZero,
  type DatabaseEngine,
  type EngineDeps,
  type ScratchServer,
  type Target,
} from './engine.js';

const client = (t: Target) => ['-h', '127.0.0.1', '-U', t.username, '-d', t.name];

function dump(deps: EngineDeps, t: Target): Promise<ExecHandle> {
  // Custom format, uncompressed: the backup compresses, and pg_restore --list can read it.
  return execStream(deps.engine, t.container, ['pg_dump', '-Fc', '-Z0', ...client(t)], {
    env: [`PGPASSWORD=${t.password}`],
    stoppable: true,
  });
}

async function restore(deps: EngineDeps, t: Target, dump: () => Promise<Readable>): Promise<void> {
  const h = await execStream(
    deps.engine,
    t.container,
    [
      'pg_restore',
      '--clean',
      '--if-exists',
      '--no-owner',
      '--no-privileges',
      '--single-transaction',
      '--exit-on-error',
      ...client(t),
    ],
    { env: [`PGPASSWORD=${t.password}`], stdin: await dump() },
  );
  h.stdout.resume();
  failIfNonZero('pg_restore', await h.done);
}

// Every table with its row count, one per line.
const TABLE_COUNTS =
  "SELECT table_schema || '.' || table_name || ' ' || (xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM %I.%I', table_schema, table_name), false, true, '')))[1]::text FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1";

/** The archive's table of contents is read, then it is restored and every table counted. */
async function verify(deps: EngineDeps, s: ScratchServer, dump: () => Promise<Readable>): Promise<string> {
  const { target: t } = s;
  await s.start();
  const list = await execStream(deps.engine, t.container, ['pg_restore', '--list'], { stdin: await dump() });
  let entries = 0;
  list.stdout.on('data', (b: Buffer) => {
    entries += b
      .toString()
      .split('\n')
      .filter((l) => l && !l.startsWith(';')).length;
  });
  failIfNonZero('pg_restore --list', await list.done);
  await restore(deps, t, dump);
  const r = await execCapture(
    deps.engine,
    t.container,
    ['psql', ...client(t), '-At', '-v', 'ON_ERROR_STOP=1', '-c', TABLE_COUNTS],
    { env: [`PGPASSWORD=${t.password}`] },
  );
  failIfNonZero('psql', r);
  const tables = r.stdout.trim().split('\n').filter(Boolean);
  return `pg_restore --list: ${entries} entries; ${tables.length} tables: ${tables.join(', ').slice(0, 300)}`;
}

export const postgres: DatabaseEngine = {
  spec: {
    engine: 'postgres',
    versions: ['16', '15'],
    default_version: '16',
    images: { '16': 'postgres:16.4-bookworm', '15': 'postgres:15.8-bookworm' },
    port: 5432,
    dataPath: '/var/lib/postgresql/data',
    defaultEnvVar: 'DATABASE_URL',
  },
  names: (short) => ({ name: `db_${short}`, username: `u_${short}` }),
  newSecrets: (random) => ({ password: random() }),
  connectionUrl: (r, password) =>
    `postgres://${encodeURIComponent(r.username)}:${encodeURIComponent(password)}@${r.host}:${r.port}/${r.name}`,
  container: (t) => ({
    Env: [`POSTGRES_USER=${t.username}`, `POSTGRES_PASSWORD=${t.password}`, `POSTGRES_DB=${t.name}`],
  }),
  // Over TCP: the entry point's initialisation server listens on the socket only.
  probe: (t) => ['CMD', 'pg_isready', ...client(t)],
  dumpClient: 'pg_dump',
  dump,
  restore,
  verify,
};
