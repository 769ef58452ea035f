// MariaDB: the official image, its clients (mariadb-dump, mariadb, mariadb-check) run in the
// database's own container as root over TCP, root's password in the client's environment.
import type { Readable } from 'node:stream';
import { execCapture, execStream, type ExecHandle } from '../exec.js';
import {
  failIfNonZero,
  type DatabaseEngine,
  type EngineDeps,
  type ScratchServer,
  type Target,
} from './engine.js';

const asRoot = (t: Target) => ({ env: [`MYSQL_PWD=${t.root}`] });

function dump(deps: EngineDeps, t: Target): Promise<ExecHandle> {
  return execStream(
    deps.engine,
    t.container,
    [
      'mariadb-dump',
      '--single-transaction',
      '--routines',
      '--events',
      '--triggers',
      '-h',
      '127.0.0.1',
      '-u',
      'root',
      '--',
      t.name,
    ],
    { ...asRoot(t), stoppable: true },
  );
}

async function restore(deps: EngineDeps, t: Target, dump: () => Promise<Readable>): Promise<void> {
  const h = await execStream(
    deps.engine,
    t.container,
    ['mariadb', '-h', '127.0.0.1', '-u', 'root', '--', t.name],
    {
      ...asRoot(t),
      stdin: await dump(),
    },
  );
  h.stdout.resume();
  failIfNonZero('mariadb', await h.done);
}

/** Restored, then every table checked (CHECK TABLE through mariadb-check). */
async function verify(deps: EngineDeps, s: ScratchServer, dump: () => Promise<Readable>): Promise<string> {
  const { target: t } = s;
  await s.start();
  await restore(deps, t, dump);
  const r = await execCapture(
    deps.engine,
    t.container,
    ['mariadb-check', '-h', '127.0.0.1', '-u', 'root', '--', t.name],
    asRoot(t),
  );
  failIfNonZero('mariadb-check', r);
  const lines = r.stdout.trim().split('\n').filter(Boolean);
  const bad = lines.filter((l) => !/\sOK$/.test(l));
  if (bad.length) throw new Error(`CHECK TABLE: ${bad.join('; ').slice(0, 300)}`);
  return `CHECK TABLE: ${lines.length} tables OK`;
}

export const mariadb: DatabaseEngine = {
  spec: {
    engine: 'mariadb',
    versions: ['11.4', '10.11'],
    default_version: '11.4',
    images: { '11.4': 'mariadb:11.4.3-noble', '10.11': 'mariadb:10.11.9-jammy' },
    port: 3306,
    dataPath: '/var/lib/mysql',
    defaultEnvVar: 'DATABASE_URL',
  },
  names: (short) => ({ name: `db_${short}`, username: `u_${short}` }),
  // Root's too: dumps and restores run as root.
  newSecrets: (random) => ({ password: random(), root: random() }),
  connectionUrl: (r, password) =>
    `mysql://${encodeURIComponent(r.username)}:${encodeURIComponent(password)}@${r.host}:${r.port}/${r.name}`,
  // A scratch server has root alone.
  container: (t, purpose) => ({
    Env:
      purpose === 'service'
        ? [
            `MARIADB_ROOT_PASSWORD=${t.root}`,
            `MARIADB_USER=${t.username}`,
            `MARIADB_PASSWORD=${t.password}`,
            `MARIADB_DATABASE=${t.name}`,
          ]
        : [`MARIADB_ROOT_PASSWORD=${t.root}`, `MARIADB_DATABASE=${t.name}`],
  }),
  probe: () => ['CMD', 'healthcheck.sh', '--connect', '--innodb_initialized'],
  dumpClient: 'mariadb-dump',
  dump,
  restore,
  verify,
};
