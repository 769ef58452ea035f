// The backups area's operations used by the handlers (thin wrappers over store/run).
import type { Services as Env } from '../http/handler.js';
import { guard, isOwned, ownedFilter, LABEL_APP, LABEL_VOLUME } from '../docker/index.js';
import { LABEL_DATABASE } from '../docker/index.js';
import { configView, getConfig, getRun, runView, type ConfigView, type RunView, type Source } from './store.js';
import type { BackupRunTable } from '../db/schema.js';
import { conflict, HttpError } from '../http/errors.js';
import { destinationOf } from './destinations.js';
import { settleJobs } from './run.js';

export async function listConfigs(env: Env, appId: string | null): Promise<ConfigView[]> {
  let q = env.db.selectFrom('backup_configs').selectAll().orderBy('created_at');
  if (appId) q = q.where('app_id', '=', appId);
  return Promise.all((await q.execute()).map((r) => configView(env, r)));
}

export async function listRuns(env: Env, appId: string, backupId: string): Promise<RunView[]> {
  await getConfig(env, appId, backupId);
  const rows = await env.db.selectFrom('backup_runs').selectAll().where('backup_id', '=', backupId).orderBy('started_at', 'desc').orderBy('id', 'desc').limit(500).execute();
  return rows.map(runView);
}

/** Removes the config, its stored artifacts and its run rows. */
export async function deleteConfig(env: Env, appId: string, backupId: string): Promise<void> {
  const cfg = await getConfig(env, appId, backupId);
  const store = destinationOf(env, cfg);
  const runs = await env.db.selectFrom('backup_runs').select(['artifact', 'artifact_removed']).where('backup_id', '=', backupId).execute();
  for (const r of runs) if (r.artifact && r.artifact_removed === 0) await store.remove(r.artifact);
  await env.db.deleteFrom('backup_configs').where('id', '=', backupId).execute();
}

/**
 * Removes one run's artifact from its destination; the run row stays, marked removed, as
 * retention leaves it (download and restore then answer 410). Nothing to remove is not an error.
 */
export async function removeRunArtifact(env: Env, appId: string, runId: string): Promise<BackupRunTable> {
  const run = await getRun(env, appId, runId);
  if (run.status === 'running') throw conflict('The run is still running: its artifact is not complete yet');
  if (!run.artifact || run.artifact_removed === 1) return run;
  const cfg = await getConfig(env, appId, run.backup_id);
  try {
    await destinationOf(env, cfg).remove(run.artifact);
  } catch (e) {
    // The row stays as it was: the artifact may still be there, and a retry removes it.
    const why = (e instanceof Error ? e.message : String(e)).slice(0, 300);
    throw new HttpError('service_unavailable', `The artifact could not be removed: ${why}`);
  }
  await env.db.updateTable('backup_runs').set({ artifact_removed: 1 }).where('id', '=', run.id).execute();
  return { ...run, artifact_removed: 1 };
}

/** Configs, failures of the last 7 days, and every database or app volume no config covers. */
export async function overview(
  env: Env,
): Promise<{ configs: ConfigView[]; failed_last_7d: Array<RunView & { app_id: string }>; uncovered: Array<{ app_id: string; service: string; volume: string; database_id?: string }> }> {
  const configs = await listConfigs(env, null);
  const since = new Date(env.now() - 7 * 86400_000).toISOString();
  const failed = await env.db
    .selectFrom('backup_runs')
    .selectAll()
    .where('status', 'in', ['failed', 'interrupted'])
    .where('started_at', '>=', since)
    .orderBy('started_at', 'desc')
    .limit(500)
    .execute();
  const covered = new Set(configs.map((c) => (c.source.type === 'database' ? `db:${c.source.database_id}` : `vol:${c.app_id}:${(c.source as Extract<Source, { type: 'volume' }>).volume}`)));
  const uncovered: Array<{ app_id: string; service: string; volume: string; database_id?: string }> = [];
  const apps = await env.db.selectFrom('apps').select(['id', 'name']).where('deleting_at', 'is', null).execute();
  const byName = new Map(apps.map((a) => [a.name, a.id]));
  for (const d of await env.db.selectFrom('app_databases').selectAll().execute()) {
    if (!covered.has(`db:${d.id}`)) uncovered.push({ app_id: d.app_id, service: `${d.engine}:${d.host}`, volume: d.volume, database_id: d.id });
  }
  // App volumes as the compose files named them: the engine's labels say which app and key.
  const vols = await guard(env.engine, () => env.engine.docker.listVolumes({ filters: ownedFilter(env.engine, [LABEL_APP]) })).catch(() => ({ Volumes: [] }));
  for (const v of vols.Volumes ?? []) {
    if (!isOwned(env.engine, 'volume', v.Name, v.Labels)) continue;
    const labels = v.Labels ?? {};
    if (labels[LABEL_DATABASE]) continue;
    const appId = byName.get(labels[LABEL_APP] ?? '');
    const key = labels[LABEL_VOLUME];
    if (!appId || !key) continue;
    if (!covered.has(`vol:${appId}:${key}`)) uncovered.push({ app_id: appId, service: '', volume: key });
  }
  return { configs, failed_last_7d: failed.map((r) => ({ ...runView(r), app_id: r.app_id })), uncovered };
}

export { settleJobs };
