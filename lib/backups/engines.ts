// Engine-specific dumps, restores and checks, all through each engine's own clients run inside
// a container (engine exec, argument arrays; passwords in the exec's environment only).
import { randomBytes } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type TarStream from 'tar-stream';
import type { Services as Env } from '../http/handler.js';
import type { AppDatabaseTable } from '../db/schema.js';
import {
  assertOwnedContainer,
  guard,
  isNotFound,
  isOwned,
  ownedFilter,
  ownerLabels,
  type Engine,
} from '../docker/index.js';
import { ensureEmptyImage, EMPTY_IMAGE } from '../docker/binds.js';
import { execCapture, execStream, type ExecHandle } from '../databases/exec.js';
import { dbSecrets, waitHealthy } from '../databases/index.js';
import { CATALOG, mappedImage, type DbEngine } from '../databases/catalog.js';
import { lazyRequire } from '../util/lazy.js';
import { databaseIds } from './store.js';

// Loaded by the first backup or restore of a volume, not at boot.
const tar = lazyRequire<typeof TarStream>('tar-stream');

export const LABEL_SCRATCH = 'svc.backup.scratch';

interface Target {
  engine: DbEngine;
  container: string;
  name: string;
  username: string;
  password: string;
  root?: string;
}

export function targetOf(env: Env, row: AppDatabaseTable): Target {
  const s = dbSecrets(env, row);
  return {
    engine: row.engine as DbEngine,
    container: row.container,
    name: row.name,
    username: row.username,
    password: s.password,
    root: s.root,
  };
}

/** The dump's byte stream; `done` rejects with the client's reason when it fails. */
export async function dumpDatabase(env: Env, t: Target): Promise<ExecHandle> {
  await assertRunning(env.engine, t.container);
  if (t.engine === 'postgres') {
    // Custom format, uncompressed: the pipeline compresses, and pg_restore --list can read it.
    return execStream(
      env.engine,
      t.container,
      ['pg_dump', '-Fc', '-Z0', '-h', '127.0.0.1', '-U', t.username, '-d', t.name],
      { env: [`PGPASSWORD=${t.password}`], stoppable: true },
    );
  }
  if (t.engine === 'mariadb') {
    return execStream(
      env.engine,
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
      {
        env: [`MYSQL_PWD=${t.root}`],
        stoppable: true,
      },
    );
  }
  return execStream(env.engine, t.container, ['redis-cli', '-h', '127.0.0.1', '--rdb', '-'], {
    env: [`REDISCLI_AUTH=${t.password}`],
    stoppable: true,
  });
}

async function assertRunning(engine: Engine, container: string): Promise<void> {
  let info;
  try {
    info = await guard(engine, () => engine.docker.getContainer(container).inspect());
  } catch (e) {
    if (isNotFound(e)) throw new Error('the database container does not exist');
    throw e;
  }
  if (!isOwned(engine, 'container', info.Id, info.Config?.Labels))
    throw new Error('the database container was not made by this control plane');
  if (!info.State?.Running) throw new Error('the database container is not running');
}

function failIfNonZero(what: string, r: { code: number; stderr: string }): void {
  if (r.code !== 0)
    throw new Error(
      `${what} exited with ${r.code}: ${r.stderr.trim().split('\n').slice(-3).join(' ').slice(0, 400)}`,
    );
}

/** Feeds the (decompressed) dump to the engine's restore client in `container`. */
export async function restoreDatabase(env: Env, t: Target, dump: () => Promise<Readable>): Promise<void> {
  if (t.engine === 'postgres') {
    const h = await execStream(
      env.engine,
      t.container,
      [
        'pg_restore',
        '--clean',
        '--if-exists',
        '--no-owner',
        '--no-privileges',
        '--single-transaction',
        '--exit-on-error',
        '-h',
        '127.0.0.1',
        '-U',
        t.username,
        '-d',
        t.name,
      ],
      { env: [`PGPASSWORD=${t.password}`], stdin: await dump() },
    );
    h.stdout.resume();
    failIfNonZero('pg_restore', await h.done);
    return;
  }
  if (t.engine === 'mariadb') {
    const h = await execStream(
      env.engine,
      t.container,
      ['mariadb', '-h', '127.0.0.1', '-u', 'root', '--', t.name],
      { env: [`MYSQL_PWD=${t.root}`], stdin: await dump() },
    );
    h.stdout.resume();
    failIfNonZero('mariadb', await h.done);
    return;
  }
  // Redis loads dump.rdb at start: stop it, put the file into its data volume, start it.
  const c = env.engine.docker.getContainer(t.container);
  await guard(env.engine, () =>
    c.stop({ t: 30 }).catch((e) => {
      if ((e as { statusCode?: number }).statusCode !== 304) throw e;
    }),
  );
  await putFile(env, t.container, '/data', 'dump.rdb', dump);
  await guard(env.engine, () => c.start());
  await waitHealthy(env.engine, t.container);
}

/** Writes one file into a (possibly stopped) container's path; the engine needs its size first. */
async function putFile(
  env: Env,
  container: string,
  dir: string,
  name: string,
  content: () => Promise<Readable>,
): Promise<void> {
  const tmp = await spoolToFile(env, await content());
  try {
    const size = (await stat(tmp.path)).size;
    const pack = tar().pack();
    const entry = pack.entry({ name, size, mode: 0o600, uid: 999, gid: 999 }, (err) =>
      err ? pack.destroy(err) : pack.finalize(),
    );
    createReadStream(tmp.path).pipe(entry);
    await assertOwnedContainer(env.engine, container);
    await guard(env.engine, () =>
      env.engine.docker
        .getContainer(container)
        .putArchive(pack as unknown as NodeJS.ReadableStream, { path: dir }),
    );
  } finally {
    await tmp.remove();
  }
}

async function spoolToFile(env: Env, src: Readable): Promise<{ path: string; remove: () => Promise<void> }> {
  const { mkdir, rm } = await import('node:fs/promises');
  const { createWriteStream } = await import('node:fs');
  const { pipeline } = await import('node:stream/promises');
  const { join } = await import('node:path');
  const dir = join(env.config.dataDir, 'backups', 'tmp');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${randomBytes(8).toString('hex')}.tmp`);
  await pipeline(src, createWriteStream(path, { mode: 0o600, flags: 'wx' }));
  return { path, remove: () => rm(path, { force: true }) };
}

/**
 * Scratch servers of a verify the process died during keep running (a whole database server,
 * on no network) until removed: at boot, the ones made for this instance's databases go, with
 * their anonymous volumes. Another control plane's on the same engine are not touched.
 */
export async function sweepScratchServers(env: Env): Promise<number> {
  const ids = await databaseIds(env.db);
  if (!ids.size) return 0;
  const list = await guard(env.engine, () =>
    env.engine.docker.listContainers({ all: true, filters: ownedFilter(env.engine, [LABEL_SCRATCH]) }),
  );
  let removed = 0;
  for (const c of list) {
    if (!isOwned(env.engine, 'container', c.Id, c.Labels) || !ids.has(c.Labels?.[LABEL_SCRATCH] ?? ''))
      continue;
    await guard(env.engine, () => env.engine.docker.getContainer(c.Id).remove({ force: true, v: true })).then(
      () => removed++,
      (e) => {
        if (!isNotFound(e)) throw e;
      },
    );
  }
  return removed;
}

// ---- volumes: the engine reads and writes the tree through a container that never starts ----

async function volumeHelper(
  env: Env,
  volume: string,
  readOnly: boolean,
  label: string,
): Promise<import('dockerode').Container> {
  try {
    await guard(env.engine, () => env.engine.docker.getVolume(volume).inspect());
  } catch (e) {
    if (isNotFound(e)) throw new Error(`the volume ${volume} does not exist`);
    throw e;
  }
  await ensureEmptyImage(env.engine);
  return guard(env.engine, () =>
    env.engine.docker.createContainer({
      Image: EMPTY_IMAGE,
      Cmd: ['/never-started'],
      Labels: { ...ownerLabels(env.engine), [LABEL_SCRATCH]: label },
      HostConfig: {
        NetworkMode: 'none',
        Mounts: [{ Type: 'volume', Source: volume, Target: '/backup-src', ReadOnly: readOnly }],
      },
    }),
  );
}

export async function dumpVolume(
  env: Env,
  volume: string,
): Promise<{ stream: Readable; cleanup: () => Promise<void> }> {
  const c = await volumeHelper(env, volume, true, 'volume-dump');
  try {
    const stream = (await guard(env.engine, () =>
      c.getArchive({ path: '/backup-src' }),
    )) as unknown as Readable;
    return {
      stream,
      cleanup: () =>
        c.remove({ force: true }).then(
          () => {},
          () => {},
        ),
    };
  } catch (e) {
    await c.remove({ force: true }).catch(() => {});
    throw e;
  }
}

/** Writes the archived tree back over the volume (entries are `backup-src/...`). */
export async function restoreVolume(env: Env, volume: string, archive: Readable): Promise<void> {
  const c = await volumeHelper(env, volume, false, 'volume-restore');
  try {
    await guard(env.engine, () => c.putArchive(archive as unknown as NodeJS.ReadableStream, { path: '/' }));
  } finally {
    await c.remove({ force: true }).catch(() => {});
  }
}

/** Volume check: the archive parses to the end; files counted and hashed. */
export async function checkVolumeArchive(archive: Readable): Promise<{ files: number; bytes: number }> {
  const { createHash } = await import('node:crypto');
  const extract = tar().extract();
  let files = 0;
  let bytes = 0;
  await new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const h = createHash('sha256');
      stream.on('data', (c: unknown) => {
        h.update(c as Buffer);
        bytes += (c as Buffer).length;
      });
      stream.on('end', () => {
        if (header.type === 'file') files++;
        h.digest();
        next();
      });
      stream.on('error', reject);
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
    archive.on('error', reject);
    archive.pipe(extract);
  });
  return { files, bytes };
}

// ---- verify: a scratch instance of the same engine, never on any network ----

export async function verifyDatabase(
  env: Env,
  row: AppDatabaseTable,
  dump: () => Promise<Readable>,
): Promise<string> {
  const spec = CATALOG[row.engine as DbEngine];
  const image = mappedImage(env.config, spec.images[row.version]!);
  const pw = randomBytes(18).toString('base64url');
  const t: Target = {
    engine: row.engine as DbEngine,
    container: '',
    name: row.engine === 'redis' ? '0' : row.name,
    username: row.engine === 'redis' ? 'default' : row.username,
    password: pw,
    root: pw,
  };
  const envs =
    row.engine === 'postgres'
      ? [`POSTGRES_USER=${t.username}`, `POSTGRES_PASSWORD=${pw}`, `POSTGRES_DB=${t.name}`]
      : row.engine === 'mariadb'
        ? [`MARIADB_ROOT_PASSWORD=${pw}`, `MARIADB_DATABASE=${t.name}`]
        : [`REDIS_PASSWORD=${pw}`];
  const hc = { Interval: 1e9, Timeout: 5e9, Retries: 120, StartPeriod: 120e9 };
  const healthcheck =
    row.engine === 'postgres'
      ? { Test: ['CMD', 'pg_isready', '-h', '127.0.0.1', '-U', t.username, '-d', t.name], ...hc }
      : row.engine === 'mariadb'
        ? { Test: ['CMD', 'healthcheck.sh', '--connect', '--innodb_initialized'], ...hc }
        : { Test: ['CMD-SHELL', 'REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli ping | grep -q PONG'], ...hc };
  const c = await guard(env.engine, () =>
    env.engine.docker.createContainer({
      Image: image,
      Env: envs,
      Cmd: row.engine === 'redis' ? ['redis-server', '--requirepass', pw, '--appendonly', 'no'] : undefined,
      Healthcheck: healthcheck,
      Labels: { ...ownerLabels(env.engine), [LABEL_SCRATCH]: row.id },
      HostConfig: { NetworkMode: 'none', SecurityOpt: ['no-new-privileges'] },
    }),
  );
  t.container = c.id;
  try {
    if (row.engine === 'redis') {
      await putFile(env, c.id, '/data', 'dump.rdb', dump);
      await guard(env.engine, () => c.start());
      await waitHealthy(env.engine, c.id);
      const r = await execCapture(env.engine, c.id, ['redis-cli', '-h', '127.0.0.1', 'DBSIZE'], {
        env: [`REDISCLI_AUTH=${pw}`],
      });
      failIfNonZero('redis-cli DBSIZE', r);
      const n = Number(r.stdout.trim());
      if (!Number.isInteger(n)) throw new Error(`DBSIZE answered ${r.stdout.trim().slice(0, 80)}`);
      return `DBSIZE ${n}`;
    }
    await guard(env.engine, () => c.start());
    await waitHealthy(env.engine, c.id);
    if (row.engine === 'postgres') {
      const list = await execStream(env.engine, c.id, ['pg_restore', '--list'], { stdin: await dump() });
      let entries = 0;
      list.stdout.on('data', (b: Buffer) => {
        entries += b
          .toString()
          .split('\n')
          .filter((l) => l && !l.startsWith(';')).length;
      });
      failIfNonZero('pg_restore --list', await list.done);
      await restoreDatabase(env, t, dump);
      const q =
        "SELECT table_schema || '.' || table_name || ' ' || (xpath('/row/c/text()', query_to_xml(format('SELECT count(*) AS c FROM %I.%I', table_schema, table_name), false, true, '')))[1]::text FROM information_schema.tables WHERE table_type = 'BASE TABLE' AND table_schema NOT IN ('pg_catalog', 'information_schema') ORDER BY 1";
      const r = await execCapture(
        env.engine,
        c.id,
        ['psql', '-h', '127.0.0.1', '-U', t.username, '-d', t.name, '-At', '-v', 'ON_ERROR_STOP=1', '-c', q],
        { env: [`PGPASSWORD=${pw}`] },
      );
      failIfNonZero('psql', r);
      const tables = r.stdout.trim().split('\n').filter(Boolean);
      return `pg_restore --list: ${entries} entries; ${tables.length} tables: ${tables.join(', ').slice(0, 300)}`;
    }
    await restoreDatabase(env, t, dump);
    const r = await execCapture(
      env.engine,
      c.id,
      ['mariadb-check', '-h', '127.0.0.1', '-u', 'root', '--', t.name],
      { env: [`MYSQL_PWD=${pw}`] },
    );
    failIfNonZero('mariadb-check', r);
    const lines = r.stdout.trim().split('\n').filter(Boolean);
    const bad = lines.filter((l) => !/\sOK$/.test(l));
    if (bad.length) throw new Error(`CHECK TABLE: ${bad.join('; ').slice(0, 300)}`);
    return `CHECK TABLE: ${lines.length} tables OK`;
  } finally {
    await c.remove({ force: true, v: true }).catch(() => {});
  }
}
