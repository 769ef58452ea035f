// What the certificate and backup metrics read from the control database: the certificates the
// edge serves (and those uploaded), the backup configurations with their newest success.
import type { Db } from '../db/index.js';

/** Hostname and expiry of every certificate known (an app's hosts only when `appId` is given). */
export async function certificateExpiries(
  db: Db,
  appId: string | null,
): Promise<Array<{ host: string; not_after: string }>> {
  let served = db
    .selectFrom('host_checks')
    .select(['host_checks.hostname as host', 'host_checks.cert_not_after as not_after'])
    .where('host_checks.cert_not_after', 'is not', null);
  let uploaded = db
    .selectFrom('domain_certificates')
    .innerJoin('domains', 'domains.id', 'domain_certificates.domain_id')
    .select(['domains.hostname as host', 'domain_certificates.not_after as not_after']);
  if (appId !== null) {
    served = served
      .innerJoin('domains', 'domains.hostname', 'host_checks.hostname')
      .where('domains.app_id', '=', appId);
    uploaded = uploaded.where('domains.app_id', '=', appId);
  }
  const rows = [...(await served.execute()), ...(await uploaded.execute())];
  return rows.filter((r): r is { host: string; not_after: string } => r.not_after !== null);
}

export interface BackupAge {
  /** What the backup is of: an app's config id, or `instance`. */
  id: string;
  app_id: string | null;
  schedule: string;
  /** The newest successful run's end, else the configuration's creation. */
  last_success: string;
}

/** Enabled backup configurations (an app's, or all with the instance backup) and their newest success. */
export async function backupAges(db: Db, appId: string | null): Promise<BackupAge[]> {
  let q = db
    .selectFrom('backup_configs')
    .leftJoin('backup_runs', (j) =>
      j.onRef('backup_runs.backup_id', '=', 'backup_configs.id').on('backup_runs.status', '=', 'succeeded'),
    )
    .select([
      'backup_configs.id',
      'backup_configs.app_id',
      'backup_configs.schedule',
      'backup_configs.created_at',
    ])
    .select((eb) => eb.fn.max('backup_runs.finished_at').as('last'))
    .where('backup_configs.enabled', '=', 1)
    .groupBy([
      'backup_configs.id',
      'backup_configs.app_id',
      'backup_configs.schedule',
      'backup_configs.created_at',
    ]);
  if (appId !== null) q = q.where('backup_configs.app_id', '=', appId);
  const out: BackupAge[] = (await q.execute()).map((r) => ({
    id: r.id,
    app_id: r.app_id,
    schedule: r.schedule,
    last_success: (r.last as string | null) ?? r.created_at,
  }));
  if (appId === null) {
    const inst = await db
      .selectFrom('instance_backup')
      .select(['schedule', 'created_at', 'enabled'])
      .where('enabled', '=', 1)
      .executeTakeFirst();
    if (inst) {
      const last = await db
        .selectFrom('instance_backup_runs')
        .select((eb) => eb.fn.max('finished_at').as('last'))
        .where('status', '=', 'succeeded')
        .executeTakeFirst();
      out.push({
        id: 'instance',
        app_id: null,
        schedule: inst.schedule,
        last_success: (last?.last as string | null) ?? inst.created_at,
      });
    }
  }
  return out;
}
