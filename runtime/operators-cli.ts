// `svc operators <subcommand>`: break-glass on the host, for when nobody can sign in (a lost
// authenticator, a locked-out owner). Each subcommand gets the service's database and
// configuration, answers an exit status, and audits what it changes; their declarations (usage,
// arguments) are in runtime/cli/commands/operators.ts.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import type { Config } from '#lib/config.js';
import type { Db } from '#lib/db/index.js';

export interface Stdio {
  out(line: string): void;
  err(line: string): void;
}

export interface OperatorsCtx {
  db: Db;
  config: Config;
  io: Stdio;
}

/** `svc operators list [--json]`. */
export async function listOperators({ db, io }: OperatorsCtx, json: boolean): Promise<number> {
  const { listHostOperators } = await import('#lib/auth/host-operators.js');
  const ops = await listHostOperators(db);
  if (json) {
    io.out(
      JSON.stringify(
        ops.map(({ app_names: _names, ...o }) => o),
        null,
        2,
      ),
    );
    return 0;
  }
  if (ops.length === 0) {
    io.out('no operator yet: setup is open (svc setup-token prints its token)');
    return 0;
  }
  const rows = ops.map((o) => [
    o.username,
    o.role,
    o.app_names === null ? 'all' : o.app_names.join(',') || '(none)',
    o.disabled ? 'yes' : 'no',
    o.totp_enabled ? 'on' : 'off',
    o.last_login_at ?? 'never',
  ]);
  for (const line of table(['USERNAME', 'ROLE', 'APPS', 'DISABLED', 'TOTP', 'LAST SIGN-IN'], rows))
    io.out(line);
  return 0;
}

/** `svc operators disable-totp <username>`. */
export async function disableTotp({ db, io }: OperatorsCtx, username: string): Promise<number> {
  const { disableOperatorTotp, NoSuchOperator } = await import('#lib/auth/host-operators.js');
  try {
    const r = await disableOperatorTotp(db, username);
    io.out(
      `${username}: two-factor sign-in is off${r.hadTotp ? '' : ' (it was not on)'}; recovery codes removed; ${r.sessions} session(s) ended`,
    );
    io.out('they sign in with their password alone now, and should set up TOTP again from their profile');
    return 0;
  } catch (e) {
    if (!(e instanceof NoSuchOperator)) throw e;
    io.err(`svc operators disable-totp: ${e.message} (svc operators list shows them); nothing was changed`);
    return 1;
  }
}

/** `svc operators reset <username>`: prints a single-use link. */
export async function resetOperator({ db, config, io }: OperatorsCtx, username: string): Promise<number> {
  const { findUserByName } = await import('#lib/auth/users-store.js');
  const { createResetLink, publicBase } = await import('#lib/auth/invitations.js');
  const { recordAudit } = await import('#lib/audit/index.js');
  const user = await findUserByName(db, username);
  if (!user) {
    io.err(
      `svc operators reset: no operator named ${JSON.stringify(username.slice(0, 64))} (svc operators list shows them)`,
    );
    return 1;
  }
  const base = await publicBase(db, config);
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
  io.err(
    `Reset link for ${user.username}, single use, until ${link.expires_at}: it sets a new password and turns TOTP off.`,
  );
  if (!base)
    io.err(
      'The service does not know its public address (SVC_PUBLIC_URL or a base domain): prefix the path with the address you open the dashboard at.',
    );
  return 0;
}

/**
 * Runs `fn` on the service's own database (never a new one: without it, it stops and says where it
 * looked). Works while the service runs: SQLite serialises the writes.
 */
export async function withServiceDb(
  config: Config,
  io: Stdio,
  fn: (ctx: OperatorsCtx) => Promise<number>,
): Promise<number> {
  const file = join(config.dataDir, 'svc.db');
  if (!config.databaseUrl && !existsSync(file)) {
    io.err(
      `svc operators: no service database at ${file}; run it with the SVC_DATA_DIR (or SVC_ENV_FILE) the service uses`,
    );
    return 1;
  }
  const { openDatabase } = await import('#lib/db/index.js');
  const db = openDatabase(config);
  try {
    return await fn({ db, config, io });
  } finally {
    await db.destroy();
  }
}

/** Left-aligned columns, two spaces apart. */
function table(head: string[], rows: string[][]): string[] {
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) =>
    cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  return [line(head), ...rows.map(line)];
}
