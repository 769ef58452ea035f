// Where the master key comes from. An explicit SVC_MASTER_KEY always wins; without one, the key
// lives in <dataDir>/master.key (0600), generated on first boot so that the README's two
// commands give a service that can seal secrets. A key beside the data protects less than one
// supplied from outside (a copy of the data directory carries its key): the posture row says so.
import { randomBytes } from 'node:crypto';
import { chmodSync, closeSync, existsSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';

export const MASTER_KEY_FILE = 'master.key';
export const masterKeyPath = (dataDir: string) => join(dataDir, MASTER_KEY_FILE);
/** Where `svc rotate-master-key` keeps the new key until the data is sealed under it and it is in place. */
export const nextMasterKeyPath = (dataDir: string) => join(dataDir, `${MASTER_KEY_FILE}.next`);

/** Boot must stop: the message says what is wrong and what to do. */
export class MasterKeyError extends Error {}

export type MasterKeySource = 'env' | 'file';

export interface MasterKeyChoice {
  key: Buffer | null;
  source: MasterKeySource | null;
  /** The key file was written just now (first boot). */
  generated: boolean;
  /** The key in the file, when there is one (it may differ from an explicit key). */
  fileKey: Buffer | null;
}

const HEX64 = /^[0-9a-fA-F]{64}$/;

/** The key in `<dataDir>/master.key`, or null when there is no such file. */
export function readMasterKeyFile(dataDir: string): Buffer | null {
  const path = masterKeyPath(dataDir);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw new MasterKeyError(`cannot read the master key file ${path}: ${(e as Error).message}`);
  }
  const hex = text.trim();
  if (!HEX64.test(hex))
    throw new MasterKeyError(
      `${path} must hold 64 hexadecimal characters (the master key); it holds something else`,
    );
  return Buffer.from(hex, 'hex');
}

/** The key a rotation left in the side file, or null (none, or not a key). */
export function readNextKey(dataDir: string): Buffer | null {
  try {
    const hex = readFileSync(nextMasterKeyPath(dataDir), 'utf8').trim();
    return HEX64.test(hex) ? Buffer.from(hex, 'hex') : null;
  } catch {
    return null;
  }
}

/**
 * Picks the key: SVC_MASTER_KEY, else the file, else (when `generate` and nothing sealed exists
 * yet) a new file. Refuses to invent a key when sealed data is already there: a new key could
 * never open it, and the operator has most likely just forgotten SVC_MASTER_KEY.
 */
export function chooseMasterKey(
  dataDir: string,
  explicit: Buffer | null,
  o: { generate: boolean; hasSealedData: boolean },
): MasterKeyChoice {
  const fileKey = readMasterKeyFile(dataDir);
  if (fileKey) chmodSync(masterKeyPath(dataDir), 0o600);
  if (explicit) return { key: explicit, source: 'env', generated: false, fileKey };
  if (fileKey) return { key: fileKey, source: 'file', generated: false, fileKey };
  if (o.hasSealedData) {
    throw new MasterKeyError(
      `the database in ${dataDir} holds secrets sealed with a master key, but SVC_MASTER_KEY is not set and ${masterKeyPath(dataDir)} does not exist: ` +
        'set SVC_MASTER_KEY to the key that sealed them (or restore the key file from your backup)',
    );
  }
  if (!o.generate) return { key: null, source: null, generated: false, fileKey: null };
  const key = randomBytes(32);
  const path = masterKeyPath(dataDir);
  // `wx`: never overwrite a key another process wrote in between.
  let fd: number;
  try {
    fd = openSync(path, 'wx', 0o600);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'EEXIST' && existsSync(path))
      return {
        key: readMasterKeyFile(dataDir),
        source: 'file',
        generated: false,
        fileKey: readMasterKeyFile(dataDir),
      };
    throw e;
  }
  try {
    writeSync(fd, key.toString('hex') + '\n');
  } finally {
    closeSync(fd);
  }
  return { key, source: 'file', generated: true, fileKey: key };
}
