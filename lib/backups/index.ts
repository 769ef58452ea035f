// The backups area's listings the handlers answer with, the overview, and deleting a config. The
// jobs are their own modules: run.ts, restore.ts, verify.ts, download.ts, retention.ts, recovery.ts.
import type { Services } from '../http/handler.js';
import { guard, isOwned, ownedFilter, LABEL_APP, LABEL_VOLUME } from '../docker/index.js';
import { LABEL_DATABASE } from '../docker/index.js';
import type { Source } from './config.js';
import { allDatabases } from '../databases/store.js';
import {
  artifactsOf,
  deleteConfigRow,
  failedRunsSince,
  getConfig,
  listConfigRows,
  listRunRows,
  liveAppIds,
} from './store.js';
import { configView, runView, type ConfigView, type RunView } from './views.js';
import { destinationOf } from './destinations.js';

export async function listConfigs(env: Services, appId: string | null): Promise<ConfigView[]> {
  return Promise.all((await listConfigRows(env.db, appId)).map((r) => configView(env, r)));
}

export async function listRuns(env: Services, appId: string, backupId: string): Promise<RunView[]> {
  await getConfig(env.db, appId, backupId);
  return (await listRunRows(env.db, backupId)).map(runView);
}

/** Removes the config, its stored artifacts and its run rows. */
export async function deleteConfig(env: Services, appId: string, backupId: string): Promise<void> {
  const cfg = await getConfig(env.db, appId, backupId);
  const store = destinationOf(env, cfg);
  for (const r of await artifactsOf(env.db, backupId))
    if (r.artifact && r.artifact_removed === 0) await store.remove(r.artifact);
  await deleteConfigRow(env.db, backupId);
}

/** Configs, failures of the last 7 days, and every database or app volume no config covers. */
export async function overview(env: Services): Promise<{
  configs: ConfigView[];
  failed_last_7d: Array<RunView & { app_id: string }>;
  uncovered: Array<{ app_id: string; service: string; volume: string; database_id?: string }>;
}> {
  const configs = await listConfigs(env, null);
  const since = new Date(env.now() - 7 * 86400_000).toISOString();
  const failed = await failedRunsSince(env.db, since);
  const covered = new Set(
    configs.map((c) =>
      c.source.type === 'database'
        ? `db:${c.source.database_id}`
        : `vol:${c.app_id}:${(c.source as Extract<Source, { type: 'volume' }>).volume}`,
    ),
  );
  const uncovered: Array<{ app_id: string; service: string; volume: string; database_id?: string }> = [];
  const byName = await liveAppIds(env.db);
  for (const d of await allDatabases(env.db)) {
    if (!covered.has(`db:${d.id}`))
      uncovered.push({
        app_id: d.app_id,
        service: `${d.engine}:${d.host}`,
        volume: d.volume,
        database_id: d.id,
      });
  }
  // App volumes as the compose files named them: the engine's labels say which app and key.
  const vols = await guard(env.engine, () =>
    env.engine.docker.listVolumes({ filters: ownedFilter(env.engine, [LABEL_APP]) }),
  ).catch(() => ({ Volumes: [] }));
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
