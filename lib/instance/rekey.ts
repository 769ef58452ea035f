// Every sealed value in the database, and moving all of them from one master key to another in
// one SQLite transaction (`svc rotate-master-key`, runtime/rotate-key-cli.ts). sealed-rows.ts
// samples one value per place to check a key at boot; this is the full inventory: a new column
// that holds sealed values belongs here too, or a rotation leaves it unreadable.
import type { Db } from '../db/index.js';
import { rawConnection } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { totpBinding } from '../auth/totp.js';
import { envBinding, previewEnvBinding } from '../apps/env.js';
import { webhookBinding } from '../webhooks/store.js';
import { keyBinding as sshKeyBinding } from '../keys/store.js';
import { keyBinding as certKeyBinding } from '../domains/store.js';
import { channelBinding } from '../notify/store.js';
import { dbBinding } from '../databases/index.js';
import { s3Binding } from '../backups/store.js';
import { SIGNING_KEY_SETTING, SIGNING_KEY_BINDING, isSealed } from '../auth/signing.js';
import { FP_PURPOSE, isMasked } from '../audit/state.js';

type Row = Record<string, string>;

interface SealedColumn {
  what: string;
  table: string;
  column: string;
  /** The row's other columns the binding needs. */
  keys: string[];
  binding(r: Row): string;
  /** Extra filter (constant SQL). */
  where?: string;
  /** A value in this column may also be stored in clear (an old signing key). */
  sealedOnly?: (v: string) => boolean;
}

const COLUMNS: readonly SealedColumn[] = [
  { what: 'the signing key', table: 'settings', column: 'value', keys: [], where: `key = '${SIGNING_KEY_SETTING}'`, binding: () => SIGNING_KEY_BINDING, sealedOnly: isSealed },
  { what: 'TOTP secrets', table: 'users', column: 'totp_secret', keys: ['id'], binding: (r) => totpBinding(r.id!) },
  { what: 'pending TOTP secrets', table: 'users', column: 'totp_pending', keys: ['id'], binding: (r) => totpBinding(r.id!) + ':pending' },
  { what: 'environment variables', table: 'app_env', column: 'sealed', keys: ['app_id', 'key'], binding: (r) => envBinding(r.app_id!, r.key!) },
  { what: 'preview variables', table: 'preview_env', column: 'sealed', keys: ['app_id', 'key'], binding: (r) => previewEnvBinding(r.app_id!, r.key!) },
  { what: 'webhook secrets', table: 'app_webhooks', column: 'secret_sealed', keys: ['app_id'], binding: (r) => webhookBinding(r.app_id!) },
  { what: 'deploy keys', table: 'app_ssh_keys', column: 'private_sealed', keys: ['app_id'], binding: (r) => sshKeyBinding(r.app_id!) },
  { what: 'certificate keys', table: 'domain_certificates', column: 'key_sealed', keys: ['domain_id'], binding: (r) => certKeyBinding(r.domain_id!) },
  { what: 'database passwords', table: 'app_databases', column: 'password_sealed', keys: ['id'], binding: (r) => dbBinding(r.id!) },
  { what: 'backup destination secrets', table: 'backup_configs', column: 'secret_sealed', keys: ['id'], binding: (r) => s3Binding(r.id!) },
  { what: 'the instance backup destination secret', table: 'instance_backup', column: 'secret_sealed', keys: ['id'], binding: (r) => s3Binding(r.id!) },
  { what: 'notification channel URLs', table: 'notification_channels', column: 'url_sealed', keys: ['id'], binding: (r) => channelBinding(r.id!) },
];

export class RekeyError extends Error {}

export interface RekeyReport {
  /** What was re-sealed: a line per kind, with its count. */
  counts: Array<{ what: string; n: number }>;
  /** Audit entries whose masked secrets were re-sealed. */
  auditEntries: number;
  /** Operators whose recovery codes were removed (they were keyed by the old key). */
  recoveryCodesRemovedFor: string[];
}

/**
 * Opens every sealed value with `from` and seals it again with `to`, in one transaction: any
 * value that does not open rolls everything back (RekeyError names where it is, never the value).
 * Recovery codes are stored as keyed digests that cannot be re-keyed; they are removed, and the
 * report names whose. With `dryRun` the transaction is rolled back: a check that `from` opens all.
 */
export function rekeyDatabase(db: Db, from: Sealer, to: Sealer, opts: { dryRun?: boolean } = {}): RekeyReport {
  const raw = rawConnection(db);
  const report: RekeyReport = { counts: [], auditEntries: 0, recoveryCodesRemovedFor: [] };
  const reseal = (sealed: string, binding: string, where: string): { sealed: string; plain: string } => {
    let plain: string;
    try {
      plain = from.open(sealed, binding);
    } catch {
      throw new RekeyError(`${where} does not open with the current master key; nothing was changed`);
    }
    return { sealed: to.seal(plain, binding), plain };
  };
  const rollback = new Error('dry run');
  try {
    raw.transaction(() => {
      for (const c of COLUMNS) {
        const cols = ['rowid as _rowid', c.column, ...c.keys].join(', ');
        const rows = raw.prepare(`select ${cols} from ${c.table} where ${c.column} is not null${c.where ? ` and ${c.where}` : ''}`).all() as Row[];
        const update = raw.prepare(`update ${c.table} set ${c.column} = ? where rowid = ?`);
        let n = 0;
        for (const r of rows) {
          const value = r[c.column]!;
          if (c.sealedOnly && !c.sealedOnly(value)) continue;
          const label = `${c.what}: ${c.table} row ${c.keys.map((k) => r[k]).join('/') || r._rowid}`;
          update.run(reseal(value, c.binding(r), label).sealed, r._rowid);
          n++;
        }
        if (n > 0) report.counts.push({ what: c.what, n });
      }
      // Audit states keep secrets as the owning row's envelope plus a keyed fingerprint: both move.
      const entries = raw.prepare('select id, state_before, state_after from audit where has_state = 1').all() as Array<{ id: number; state_before: string | null; state_after: string | null }>;
      const updateEntry = raw.prepare('update audit set state_before = ?, state_after = ? where id = ?');
      for (const e of entries) {
        let changed = false;
        const walk = (v: unknown): unknown => {
          if (isMasked(v)) {
            changed = true;
            const r = reseal(v.sealed, v.binding, `a secret recorded in audit entry ${e.id}`);
            return { ...v, sealed: r.sealed, fp: to.digest(FP_PURPOSE, r.plain) };
          }
          if (Array.isArray(v)) return v.map(walk);
          if (v !== null && typeof v === 'object') return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
          return v;
        };
        const before = e.state_before === null ? null : JSON.stringify(walk(JSON.parse(e.state_before)));
        const after = e.state_after === null ? null : JSON.stringify(walk(JSON.parse(e.state_after)));
        if (!changed) continue;
        updateEntry.run(before, after, e.id);
        report.auditEntries++;
      }
      const holders = raw.prepare('select distinct u.username from recovery_codes c join users u on u.id = c.user_id where c.used_at is null order by u.username').all() as Array<{ username: string }>;
      report.recoveryCodesRemovedFor = holders.map((h) => h.username);
      raw.prepare('delete from recovery_codes').run();
      if (opts.dryRun) throw rollback;
    })();
  } catch (e) {
    if (e !== rollback) throw e;
  }
  return report;
}

/** What `sealer` cannot open, over every sealed value (empty: it opens all of them). */
export function unopenableEverywhere(db: Db, sealer: Sealer): string[] {
  try {
    rekeyDatabase(db, sealer, sealer, { dryRun: true });
    return [];
  } catch (e) {
    if (e instanceof RekeyError) return [e.message];
    throw e;
  }
}
