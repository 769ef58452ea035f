// Whole-file replacement that a reader (or a crash) never sees half-done: a temporary file in the
// same folder, written and fsynced, then renamed over the old one, and the folder synced.
import { mkdirSync, renameSync, writeFileSync } from 'node:fs';
import { mkdir, open, rename, rm } from 'node:fs/promises';
import { dirname, join, basename } from 'node:path';

const tmpOf = (path: string) => join(dirname(path), `.${basename(path)}.${process.pid}.tmp`);

export async function writeFileAtomic(path: string, text: string, mode: number): Promise<void> {
  await mkdir(dirname(path), { recursive: true });
  const tmp = tmpOf(path);
  const fh = await open(tmp, 'w', mode);
  try {
    await fh.writeFile(text);
    await fh.chmod(mode);
    await fh.sync();
  } catch (e) {
    await fh.close().catch(() => {});
    await rm(tmp, { force: true });
    throw e;
  }
  await fh.close();
  await rename(tmp, path);
  const d = await open(dirname(path), 'r').catch(() => null);
  await d?.sync().catch(() => {});
  await d?.close().catch(() => {});
}

/** The same for the synchronous CLI paths (no fsync: a marker file, not data). */
export function writeFileAtomicSync(path: string, text: string, mode: number): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = tmpOf(path);
  writeFileSync(tmp, text, { mode });
  renameSync(tmp, path);
}
