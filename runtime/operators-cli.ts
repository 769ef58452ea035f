// `svc operators reset <username>`: the host's break-glass when no owner can sign in. Prints a
// reset link (a new password, TOTP cleared) and audits it as the system actor `cli`.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '../lib/config.js';
import { openDb } from '../lib/db/index.js';
import { findUserByName } from '../lib/auth/users.js';
import { createResetLink, publicBase } from '../lib/auth/invitations.js';
import { recordAudit } from '../lib/audit/index.js';

export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

export async function operatorsReset(args: readonly string[], cfg: Config, io: CliIo): Promise<number> {
  const [username, ...rest] = args;
  if (!username || rest.length) {
    io.err('usage: svc operators reset <username>');
    return 2;
  }
  const file = join(cfg.dataDir, 'svc.db');
  if (!existsSync(file)) {
    io.err(`svc operators reset: no service database at ${file}; run it with the SVC_DATA_DIR (or SVC_ENV_FILE) the service uses`);
    return 1;
  }
  const db = openDb(cfg.dataDir);
  try {
    const user = await findUserByName(db, username);
    if (!user) {
      io.err(`svc operators reset: no operator named ${JSON.stringify(username.slice(0, 64))}`);
      return 1;
    }
    const base = await publicBase(db, cfg, null);
    const link = await createResetLink(db, null, user.id, null, base);
    await recordAudit(db, {
      route: 'POST /api/operators/{id}/reset',
      actorType: 'system',
      actor: 'cli',
      via: 'cli',
      event: 'operator.reset_link_created',
      summary: 'A reset link for an operator',
      target: user.id,
      outcome: 201,
      detail: { username: user.username, invitation_id: link.id, expires_at: link.expires_at },
    });
    io.out(link.url);
    io.err(`Reset link for ${user.username}, single use, until ${link.expires_at}: it sets a new password and turns TOTP off.`);
    if (!base) io.err('The service does not know its public address (SVC_PUBLIC_URL or a base domain): prefix the path with the address you open the dashboard at.');
    return 0;
  } finally {
    await db.destroy();
  }
}
