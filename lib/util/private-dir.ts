// The data directory holds the database, the setup token, the master key and working copies:
// only the service's user may enter it (0700), and the files the service keeps there are 0600
// whatever the umask was when an older build, a restore or an operator's copy created them.
// Working copies below keep their repository's modes on purpose (no process-wide umask): they
// become image layers, where a 0600 file is unreadable to a container's non-root user; the 0700
// directory above them is what keeps other local users out.
import { chmodSync, lstatSync, mkdirSync, readdirSync } from 'node:fs';
import { join } from 'node:path';

export function ensurePrivateDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  chmodSync(dir, 0o700);
}

/** The directory 0700, each regular file directly in it 0600 and each subdirectory 0700. */
export function tightenPrivateDir(dir: string): void {
  ensurePrivateDir(dir);
  for (const name of readdirSync(dir)) {
    const full = join(dir, name);
    let st;
    try {
      st = lstatSync(full);
    } catch {
      continue; // removed meanwhile
    }
    if (st.isFile() && (st.mode & 0o777) !== 0o600) chmodSync(full, 0o600);
    else if (st.isDirectory() && (st.mode & 0o077) !== 0) chmodSync(full, 0o700);
  }
}
