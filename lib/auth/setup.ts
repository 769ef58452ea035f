// First boot: a one-time token in <dataDir>/setup.token (0600) gates creation of the first operator.
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Db } from '../db/index.js';
import { randomToken, safeEqual } from '../crypto/random.js';
import { countUsers } from './users-store.js';

export const setupTokenPath = (dataDir: string) => join(dataDir, 'setup.token');

/** Returns the token when setup is open and a new one was written (the caller logs it once). */
export async function prepareSetup(
  db: Db,
  dataDir: string,
): Promise<{ open: boolean; created: string | null }> {
  if ((await countUsers(db)) > 0) {
    await rm(setupTokenPath(dataDir), { force: true });
    return { open: false, created: null };
  }
  const existing = await readSetupToken(dataDir);
  if (existing) return { open: true, created: null };
  const token = randomToken(24);
  await writeFile(setupTokenPath(dataDir), token + '\n', { mode: 0o600, flag: 'wx' }).catch(
    async (e: NodeJS.ErrnoException) => {
      if (e.code !== 'EEXIST') throw e;
    },
  );
  const written = await readSetupToken(dataDir);
  return { open: true, created: written === token ? token : null };
}

export async function readSetupToken(dataDir: string): Promise<string | null> {
  try {
    const t = (await readFile(setupTokenPath(dataDir), 'utf8')).trim();
    return t || null;
  } catch {
    return null;
  }
}

export async function checkSetupToken(dataDir: string, presented: string): Promise<boolean> {
  const actual = await readSetupToken(dataDir);
  // Compare even when no token exists, so the answer's timing says nothing.
  const ok = safeEqual(presented, actual ?? '\u0000no-token');
  return ok && actual !== null;
}

export async function closeSetup(dataDir: string): Promise<void> {
  await rm(setupTokenPath(dataDir), { force: true });
}
