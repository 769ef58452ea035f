// Upgrades keep a way back. A start that finds migrations to apply to a database that already has
// some first writes a consistent copy of it (SQLite's online backup) beside it, named for the
// version that wrote it; `svc rollback-upgrade` puts the newest such copy back, so the previous
// version can run again. The version that last opened the database is kept in `svc.version`.
import {
  chmodSync,
  copyFileSync,
  existsSync,
  readFileSync,
  readdirSync,
  renameSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { join } from 'node:path';
import type { MigrationProvider } from 'kysely';
import { Migrator } from './kysely.js';
import type { Db } from './index.js';
import { rawConnection } from './index.js';
import { migrations } from './migrations/index.js';

const VERSION_FILE = 'svc.version';
const SNAPSHOT = /^pre-upgrade-([A-Za-z0-9._+-]{1,64})\.db$/;
/** Copies kept: each is a whole database, and the oldest are the least likely to be wanted. */
const KEEP_SNAPSHOTS = 3;
const provider: MigrationProvider = { getMigrations: async () => migrations };

export interface UpgradeSnapshot {
  file: string;
  fromVersion: string;
  pending: string[];
}

/** The migrations this build would apply, oldest first, and whether any ran before. */
export async function migrationState(db: Db): Promise<{ pending: string[]; applied: string[] }> {
  const infos = await new Migrator({ db, provider }).getMigrations();
  return {
    pending: infos.filter((m) => !m.executedAt).map((m) => m.name),
    applied: infos.filter((m) => m.executedAt).map((m) => m.name),
  };
}

/** The version recorded by the last start that migrated the database (null: none recorded). */
export function recordedVersion(dataDir: string): string | null {
  try {
    const v = readFileSync(join(dataDir, VERSION_FILE), 'utf8').trim();
    return /^[A-Za-z0-9._+-]{1,64}$/.test(v) ? v : null;
  } catch {
    return null;
  }
}

export function recordVersion(dataDir: string, version: string): void {
  writeFileSync(join(dataDir, VERSION_FILE), version + '\n', { mode: 0o600 });
}

/**
 * Before pending migrations touch a database that has applied some, copies it to
 * `pre-upgrade-<from version>.db` (0600). Null when there is nothing to keep (a new database, or
 * nothing pending). An unknown previous version is named after its last applied migration.
 */
export async function snapshotBeforeUpgrade(db: Db, dataDir: string): Promise<UpgradeSnapshot | null> {
  const { pending, applied } = await migrationState(db);
  if (pending.length === 0 || applied.length === 0) return null;
  const fromVersion =
    recordedVersion(dataDir) ??
    `migration-${applied[applied.length - 1]!.replace(/[^A-Za-z0-9._+-]/g, '_').slice(0, 50)}`;
  const file = join(dataDir, `pre-upgrade-${fromVersion}.db`);
  const partial = `${file}.partial`;
  // The online backup API copies a consistent state page by page, WAL included.
  await rawConnection(db).backup(partial);
  chmodSync(partial, 0o600);
  renameSync(partial, file);
  for (const old of snapshots(dataDir).slice(KEEP_SNAPSHOTS)) rmSync(old.file, { force: true });
  return { file, fromVersion, pending };
}

export interface Rollback {
  restored: string;
  fromVersion: string;
  keptAs: string;
}

/** The pre-upgrade copies in the data directory, newest first. */
export function snapshots(dataDir: string): Array<{ file: string; fromVersion: string; at: number }> {
  const out = [];
  for (const name of existsSync(dataDir) ? readdirSync(dataDir) : []) {
    const m = SNAPSHOT.exec(name);
    if (m)
      out.push({ file: join(dataDir, name), fromVersion: m[1]!, at: statSync(join(dataDir, name)).mtimeMs });
  }
  return out.sort((a, b) => b.at - a.at);
}

/**
 * Puts the newest pre-upgrade copy back as `svc.db` (the service must be stopped). The upgraded
 * database is kept beside it, never deleted, as `svc.db.upgraded-<time>` with its WAL files.
 */
export function rollbackUpgrade(dataDir: string, now = Date.now()): Rollback {
  const snap = snapshots(dataDir)[0];
  if (!snap)
    throw new Error(`no pre-upgrade copy (pre-upgrade-<version>.db) in ${dataDir}: nothing to roll back to`);
  const db = join(dataDir, 'svc.db');
  const stamp = new Date(now).toISOString().replace(/[:.]/g, '-');
  const keptAs = `${db}.upgraded-${stamp}`;
  for (const suffix of ['', '-wal', '-shm'])
    if (existsSync(db + suffix)) renameSync(db + suffix, keptAs + suffix);
  copyFileSync(snap.file, db);
  chmodSync(db, 0o600);
  recordVersion(dataDir, snap.fromVersion);
  return { restored: snap.file, fromVersion: snap.fromVersion, keptAs };
}
