// `svc operators <subcommand>`: break-glass on the host, for when nobody can sign in (a lost
// authenticator, a locked-out owner). Each subcommand is one entry of SUBCOMMANDS: it gets the
// service's database and configuration, answers an exit status, and audits what it changes.
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
  /** The arguments after the subcommand's name. */
  args: string[];
}

interface Subcommand {
  /** One usage line, without the leading `svc operators`. */
  usage: string;
  run(ctx: OperatorsCtx): Promise<number>;
}

const SUBCOMMANDS: Record<string, Subcommand> = {
  list: {
    usage: 'list [--json]              every operator: role, apps, disabled, TOTP, last sign-in',
    async run({ db, io, args }) {
      const json = args.includes('--json');
      if (args.some((a) => a !== '--json'))
        return usageError(io, `unknown argument ${args.find((a) => a !== '--json')}`);
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
    },
  },
  'disable-totp': {
    usage: 'disable-totp <username>    turn off their second factor and recovery codes; end their sessions',
    async run({ db, io, args }) {
      if (args.length !== 1 || args[0]!.startsWith('-')) return usageError(io, 'one username is needed');
      const { disableOperatorTotp, NoSuchOperator } = await import('#lib/auth/host-operators.js');
      try {
        const r = await disableOperatorTotp(db, args[0]!);
        io.out(
          `${args[0]}: two-factor sign-in is off${r.hadTotp ? '' : ' (it was not on)'}; recovery codes removed; ${r.sessions} session(s) ended`,
        );
        io.out('they sign in with their password alone now, and should set up TOTP again from their profile');
        return 0;
      } catch (e) {
        if (!(e instanceof NoSuchOperator)) throw e;
        io.err(
          `svc operators disable-totp: ${e.message} (svc operators list shows them); nothing was changed`,
        );
        return 1;
      }
    },
  },
  reset: {
    usage: 'reset <username>           print a single-use link that sets a new password and turns TOTP off',
    async run({ db, config, io, args }) {
      if (args.length !== 1 || args[0]!.startsWith('-')) return usageError(io, 'one username is needed');
      const { findUserByName } = await import('#lib/auth/users.js');
      const { createResetLink, publicBase } = await import('#lib/auth/invitations.js');
      const { recordAudit } = await import('#lib/audit/index.js');
      const user = await findUserByName(db, args[0]!);
      if (!user) {
        io.err(
          `svc operators reset: no operator named ${JSON.stringify(args[0]!.slice(0, 64))} (svc operators list shows them)`,
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
    },
  },
};

export const OPERATORS_USAGE = [
  'usage: svc operators <subcommand>',
  ...Object.values(SUBCOMMANDS).map((s) => `  ${s.usage}`),
].join('\n');

function usageError(io: Stdio, message: string): number {
  io.err(`svc operators: ${message}`);
  io.err(OPERATORS_USAGE);
  return 2;
}

/**
 * Runs one subcommand on the service's own database (never a new one: without it, it stops and
 * says where it looked). Works while the service runs: SQLite serialises the writes.
 */
export async function operatorsCommand(argv: string[], config: Config, io: Stdio): Promise<number> {
  const [name, ...args] = argv;
  const sub = name === undefined ? undefined : SUBCOMMANDS[name];
  if (!sub) return usageError(io, name === undefined ? 'which subcommand?' : `unknown subcommand ${name}`);
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
    return await sub.run({ db, config, io, args });
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
