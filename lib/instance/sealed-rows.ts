// The one inventory of the columns that hold sealed values, with the binding each was sealed
// under. Both uses read it: boot samples one value per column to tell whether sealed data exists
// and whether the master key in use opens it; `svc rotate-master-key` (lib/instance/rekey.ts)
// re-seals every value of every column. A new column that holds sealed values belongs here, or a
// rotation leaves it unreadable (tests/core/sealed-inventory.test.ts checks the schema against it).
import type { Db } from '../db/index.js';
import { dialectOf, rawConnection } from '../db/index.js';
import { sql } from '../db/kysely.js';
import type { Sealer } from '../crypto/seal.js';
import { totpBinding } from '../auth/totp.js';
import { envBinding, previewEnvBinding } from '../apps/env.js';
import { webhookBinding } from '../webhooks/store.js';
import { keyBinding as sshKeyBinding } from '../keys/store.js';
import { channelBinding, channelSecretBinding } from '../notify/store.js';
import { registryBinding } from '../registries/model.js';
import { drainHeadersBinding, drainUrlBinding } from '../drains/store.js';
import {
  REGISTRY_PASSWORD_BINDING,
  REGISTRY_PASSWORD_SETTING,
  certificateKeyBinding,
  dbBinding,
  s3Binding,
} from '../crypto/bindings.js';
import { SIGNING_KEY_SETTING, SIGNING_KEY_BINDING, isSealed } from '../auth/signing.js';

export type SealedRow = Record<string, string>;

export interface SealedColumn {
  what: string;
  table: string;
  column: string;
  /** The row's other columns the binding needs. */
  keys: string[];
  binding(r: SealedRow): string;
  /** Extra filter (constant SQL). */
  where?: string;
  /** A value in this column may also be stored in clear (an old signing key). */
  sealedOnly?: (v: string) => boolean;
}

/** Every column that holds sealed values (the sealed signing key first). */
export const SEALED_COLUMNS: readonly SealedColumn[] = [
  {
    what: 'the signing key',
    table: 'settings',
    column: 'value',
    keys: [],
    where: `key = '${SIGNING_KEY_SETTING}'`,
    binding: () => SIGNING_KEY_BINDING,
    sealedOnly: isSealed,
  },
  {
    what: 'the cluster registry password',
    table: 'settings',
    column: 'value',
    keys: [],
    where: `key = '${REGISTRY_PASSWORD_SETTING}'`,
    binding: () => REGISTRY_PASSWORD_BINDING,
  },
  {
    what: 'TOTP secrets',
    table: 'users',
    column: 'totp_secret',
    keys: ['id'],
    binding: (r) => totpBinding(r.id!),
  },
  {
    what: 'pending TOTP secrets',
    table: 'users',
    column: 'totp_pending',
    keys: ['id'],
    binding: (r) => totpBinding(r.id!) + ':pending',
  },
  {
    what: 'environment variables',
    table: 'app_env',
    column: 'sealed',
    keys: ['app_id', 'key'],
    binding: (r) => envBinding(r.app_id!, r.key!),
  },
  {
    what: 'preview variables',
    table: 'preview_env',
    column: 'sealed',
    keys: ['app_id', 'key'],
    binding: (r) => previewEnvBinding(r.app_id!, r.key!),
  },
  {
    what: 'webhook secrets',
    table: 'app_webhooks',
    column: 'secret_sealed',
    keys: ['app_id'],
    binding: (r) => webhookBinding(r.app_id!),
  },
  {
    what: 'deploy keys',
    table: 'app_ssh_keys',
    column: 'private_sealed',
    keys: ['app_id'],
    binding: (r) => sshKeyBinding(r.app_id!),
  },
  {
    what: 'certificate keys',
    table: 'domain_certificates',
    column: 'key_sealed',
    keys: ['domain_id'],
    binding: (r) => certificateKeyBinding(r.domain_id!),
  },
  {
    what: 'database passwords',
    table: 'app_databases',
    column: 'password_sealed',
    keys: ['id'],
    binding: (r) => dbBinding(r.id!),
  },
  {
    what: 'backup destination secrets',
    table: 'backup_configs',
    column: 'secret_sealed',
    keys: ['id'],
    binding: (r) => s3Binding(r.id!),
  },
  {
    what: 'the instance backup destination secret',
    table: 'instance_backup',
    column: 'secret_sealed',
    keys: ['id'],
    binding: (r) => s3Binding(r.id!),
  },
  {
    what: 'notification channel URLs',
    table: 'notification_channels',
    column: 'url_sealed',
    keys: ['id'],
    binding: (r) => channelBinding(r.id!),
  },
  {
    what: 'registry passwords',
    table: 'registries',
    column: 'password_sealed',
    keys: ['id'],
    binding: (r) => registryBinding(r.id!),
  },
  {
    what: 'notification channel signing secrets',
    table: 'notification_channels',
    column: 'secret_sealed',
    keys: ['id'],
    binding: (r) => channelSecretBinding(r.id!),
  },
  {
    what: 'log drain URLs',
    table: 'log_drains',
    column: 'url_sealed',
    keys: ['id'],
    binding: (r) => drainUrlBinding(r.id!),
  },
  {
    what: 'log drain headers',
    table: 'log_drains',
    column: 'headers_sealed',
    keys: ['id'],
    binding: (r) => drainHeadersBinding(r.id!),
  },
];

/** The statement that reads a column's sealed values (with `limit`: a sample). */
export function sealedSelect(c: SealedColumn, limit?: number, rowid = true): string {
  const cols = [...(rowid ? ['rowid as _rowid'] : []), c.column, ...c.keys].join(', ');
  return `select ${cols} from ${c.table} where ${c.column} is not null${c.where ? ` and ${c.where}` : ''}${limit ? ` limit ${limit}` : ''}`;
}

interface Sample {
  what: string;
  sealed: string;
  binding: string;
}

/** One sealed value from each column that holds any. */
async function samples(db: Db): Promise<Sample[]> {
  const pg = dialectOf(db) === 'postgres';
  const raw = pg ? null : rawConnection(db);
  const out: Sample[] = [];
  for (const c of SEALED_COLUMNS) {
    const r = raw
      ? (raw.prepare(sealedSelect(c, 1)).get() as SealedRow | undefined)
      : (await sql.raw<SealedRow>(sealedSelect(c, 1, false)).execute(db)).rows[0];
    const value = r?.[c.column];
    if (!r || value == null || (c.sealedOnly && !c.sealedOnly(value))) continue;
    out.push({ what: c.what, sealed: value, binding: c.binding(r) });
  }
  return out;
}

export async function hasSealedData(db: Db): Promise<boolean> {
  return (await samples(db)).length > 0;
}

/** What the sealer cannot open (empty when it opens everything sampled). */
export async function unopenableSealedData(db: Db, sealer: Sealer): Promise<string[]> {
  const failed: string[] = [];
  for (const s of await samples(db)) {
    try {
      sealer.open(s.sealed, s.binding);
    } catch {
      failed.push(s.what);
    }
  }
  return failed;
}
