// Every sealed value in the database, and moving all of them from one master key to another in
// one SQLite transaction (`svc rotate-master-key`, runtime/rotate-key-cli.ts). The columns come
// from the one inventory in sealed-rows.ts, which boot samples too: nothing is listed twice.
import type { Db } from '../db/index.js';
import { rawConnection } from '../db/index.js';
import type { Sealer } from '../crypto/seal.js';
import { SEALED_COLUMNS, sealedSelect, type SealedRow } from './sealed-rows.js';
import { FP_PURPOSE, isMasked } from '../audit/kinds.js';

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
export function rekeyDatabase(
  db: Db,
  from: Sealer,
  to: Sealer,
  opts: { dryRun?: boolean } = {},
): RekeyReport {
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
      for (const c of SEALED_COLUMNS) {
        const rows = raw.prepare(sealedSelect(c)).all() as SealedRow[];
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
      const entries = raw
        .prepare('select id, state_before, state_after from audit where has_state = 1')
        .all() as Array<{ id: number; state_before: string | null; state_after: string | null }>;
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
          if (v !== null && typeof v === 'object')
            return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, walk(x)]));
          return v;
        };
        const before = e.state_before === null ? null : JSON.stringify(walk(JSON.parse(e.state_before)));
        const after = e.state_after === null ? null : JSON.stringify(walk(JSON.parse(e.state_after)));
        if (!changed) continue;
        updateEntry.run(before, after, e.id);
        report.auditEntries++;
      }
      const holders = raw
        .prepare(
          'select distinct u.username from recovery_codes c join users u on u.id = c.user_id where c.used_at is null order by u.username',
        )
        .all() as Array<{ username: string }>;
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
