import { existsSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { writeFileAtomicSync } from '../util/files.js';

/** `svc security-check` records the operator's opt-out here: in the data dir, so no root is needed. */
export const OPT_OUT_FILE = 'security-opt-out';

export function optOutPath(dataDir: string): string {
  return join(dataDir, OPT_OUT_FILE);
}

export function readOptOut(dataDir: string): boolean {
  return existsSync(optOutPath(dataDir));
}

export function writeOptOut(dataDir: string, on: boolean, now: Date = new Date()): void {
  const path = optOutPath(dataDir);
  if (!on) {
    rmSync(path, { force: true });
    return;
  }
  writeFileAtomicSync(
    path,
    JSON.stringify({
      opted_out_at: now.toISOString(),
      note: 'firewall and fail2ban checks disabled by operator (svc security-check)',
    }) + '\n',
    0o600,
  );
}
