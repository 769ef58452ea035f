// `svc rotate-master-key`: every sealed value moves to a new master key, and the new key goes where
// the service reads it (the key file beside the data, or SVC_MASTER_KEY in the environment file).
//
// Order, so that a crash at any point leaves a service that starts, or says exactly what to do:
//   1. the new key is written to <data>/master.key.next and the old one to a dated backup (0600);
//   2. one SQLite transaction re-seals everything (a value that does not open rolls it all back,
//      and both files are removed: everything stays under the old key);
//   3. the new key replaces the old where the service reads it (an atomic rename), then the side
//      file goes. A crash between 2 and 3 leaves the data under the key in master.key.next: boot
//      says so, and running this command again finishes the move.
import {
  chmodSync,
  closeSync,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  rmSync,
  statSync,
  writeSync,
} from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import type { HostConfig } from './host-config.js';
import type { Stdio } from './operators-cli.js';
import { masterKeyPath, readMasterKeyFile, nextMasterKeyPath } from '#lib/crypto/master-key.js';
import { parseEnvFile } from '#lib/config.js';
import { writeFileAtomic } from '#lib/util/files.js';

type Where = { kind: 'file'; path: string } | { kind: 'env-file'; path: string };

/** Where the service reads its key, or why this command cannot change it. */
function keyLocation(host: HostConfig): Where | { error: string } {
  const cfg = host.config;
  if (!cfg.masterKey) {
    if (!existsSync(masterKeyPath(cfg.dataDir)))
      return {
        error: `no master key: SVC_MASTER_KEY is not set and ${masterKeyPath(cfg.dataDir)} does not exist`,
      };
    return { kind: 'file', path: masterKeyPath(cfg.dataDir) };
  }
  const inFile = host.envFile ? parseEnvFile(readFileSync(host.envFile, 'utf8')).SVC_MASTER_KEY : undefined;
  if (
    host.envFile &&
    inFile &&
    /^[0-9a-fA-F]{64}$/.test(inFile) &&
    Buffer.from(inFile, 'hex').equals(cfg.masterKey)
  )
    return { kind: 'env-file', path: host.envFile };
  return {
    error:
      'SVC_MASTER_KEY comes from this shell, not from a file this command can rewrite' +
      `${host.envFile ? ` (${host.envFile} holds ${inFile ? 'another key' : 'none'})` : ''}: ` +
      'run it with the environment file the service reads (SVC_ENV_FILE), or with the key file beside the data',
  };
}

function writeKeyFile(path: string, key: Buffer): void {
  const fd = openSync(path, 'wx', 0o600);
  try {
    writeSync(fd, key.toString('hex') + '\n');
    fsyncSync(fd);
  } finally {
    closeSync(fd);
  }
}

/** Puts `key` where the service reads it, then drops the side file. */
async function install(where: Where, key: Buffer, side: string): Promise<void> {
  if (where.kind === 'file') {
    renameSync(side, where.path);
    chmodSync(where.path, 0o600);
    return;
  }
  const text = readFileSync(where.path, 'utf8');
  const line = /^([ \t]*(?:export[ \t]+)?SVC_MASTER_KEY[ \t]*=).*$/m;
  await writeFileAtomic(
    where.path,
    text.replace(line, `$1${key.toString('hex')}`),
    statSync(where.path).mode & 0o777,
  );
  rmSync(side, { force: true });
}

const stamp = (now: Date) => now.toISOString().replace(/[:.]/g, '-');

export async function rotateMasterKey(host: HostConfig, io: Stdio): Promise<number> {
  const cfg = host.config;
  const fail = (message: string) => {
    io.err(`svc rotate-master-key: ${message}`);
    return 1;
  };
  // The re-sealing runs in one synchronous SQLite transaction next to a file copy of the database.
  if (cfg.databaseUrl)
    return fail(
      'the database is on PostgreSQL (SVC_DATABASE_URL), which this command does not re-seal yet; nothing was changed',
    );
  const dbFile = join(cfg.dataDir, 'svc.db');
  if (!existsSync(dbFile))
    return fail(
      `no service database at ${dbFile}; run it with the SVC_DATA_DIR (or SVC_ENV_FILE) the service uses`,
    );
  const where = keyLocation(host);
  if ('error' in where) return fail(`${where.error}; nothing was changed`);
  const oldKey = cfg.masterKey ?? readMasterKeyFile(cfg.dataDir)!;
  const { openDb } = await import('#lib/db/index.js');
  const { createSealer } = await import('#lib/crypto/seal.js');
  const { rekeyDatabase, unopenableEverywhere, RekeyError } = await import('#lib/instance/rekey.js');
  const side = nextMasterKeyPath(cfg.dataDir);
  const db = openDb(cfg.dataDir);
  try {
    const oldSealer = createSealer(oldKey);
    if (existsSync(side)) {
      const pending = Buffer.from(readFileSync(side, 'utf8').trim(), 'hex');
      if (
        pending.length === 32 &&
        unopenableEverywhere(db, oldSealer).length > 0 &&
        unopenableEverywhere(db, createSealer(pending)).length === 0
      ) {
        // The last run committed, then stopped before the key was put in place: finish that.
        await install(where, pending, side);
        io.out(
          `finished an interrupted rotation: the data was already sealed under the key in ${side}; it is now in ${where.path}`,
        );
        return 0;
      }
      // A run that stopped before its commit: the data is still under the current key.
      rmSync(side);
    }
    const failed = unopenableEverywhere(db, oldSealer);
    if (failed.length > 0) return fail(failed.join('; '));
    const newKey = randomBytes(32);
    const backup = join(cfg.dataDir, `master.key.${stamp(new Date())}.old`);
    writeKeyFile(side, newKey);
    writeKeyFile(backup, oldKey);
    let report;
    try {
      report = rekeyDatabase(db, oldSealer, createSealer(newKey));
    } catch (e) {
      rmSync(side, { force: true });
      rmSync(backup, { force: true });
      if (e instanceof RekeyError) return fail(e.message);
      throw e;
    }
    await install(where, newKey, side);
    io.out(
      `every sealed value is now under a new master key, in ${where.path}${where.kind === 'env-file' ? ' (SVC_MASTER_KEY)' : ''}`,
    );
    for (const c of report.counts) io.out(`  re-sealed ${c.n} ${c.what}`);
    if (report.auditEntries)
      io.out(`  re-sealed the secrets recorded in ${report.auditEntries} audit entries`);
    io.out(
      `the old key is kept in ${backup} (0600): backups made before now are encrypted with it, so keep it`,
    );
    io.out(
      '  offline with them (svc restore-instance --key needs it for those), then delete it from this host',
    );
    if (report.recoveryCodesRemovedFor.length) {
      io.out(
        `recovery codes were keyed by the old key and are removed; these operators make new ones from their profile:`,
      );
      io.out(`  ${report.recoveryCodesRemovedFor.join(', ')}`);
    }
    io.out('start the service again; svc key show prints the new key to keep offline');
    return 0;
  } finally {
    await db.destroy();
  }
}
