// Recovery after `svc restore-instance`: the restored database describes apps and databases the new
// engine does not have. At the first start after a restore (the marker restore-instance wrote is
// there), databases whose volume is missing are provisioned again and restored from their latest
// successful backup, then every app without containers is brought back from its last successful
// deployment: its kept images when the engine has them (a rollback-style redeploy), else rebuilt
// from its source through the ordinary pipeline, at the commit that deployment recorded. A preview
// comes back through lib/previews (recoverPreview). The report is logged and kept (GET
// /api/instance/recovery); the marker goes when recovery has finished, so it runs once.
import { readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { Services } from '../http/handler.js';
import type { AppDatabaseTable, PreviewTable } from '../db/schema.js';
import { getApp } from '../apps/store.js';
import { guard, isNotFound, listAppContainers } from '../docker/index.js';
import { createDbContainer, deleteDatabase } from '../databases/index.js';
import { dbSecrets } from '../databases/engines/index.js';
import { waitHealthy } from '../databases/container.js';
import { setDatabaseStatus } from '../databases/store.js';
import { restoreDatabaseFromRun } from '../backups/restore.js';
import { keptRunsOfDatabase } from '../backups/store.js';
import { getDeploymentRow, hasSucceeded, lastSucceeded } from '../deploy/store.js';
import { readSetting, writeSetting } from '../db/settings-store.js';
import { isTerminal } from '../apps/deployment.js';
import { imagesPresent } from '../deploy/images.js';
import { deployPreview } from '../previews/ops.js';
import { allDatabaseRows, allPreviewRows, appsOfRecoveryItems, recoverableApps } from './recovery-store.js';

export const RECOVERY_MARKER = 'recovery-pending.json';
export const RECOVERY_SETTING = 'recovery_report';

export interface RecoveryMarker {
  instance_id: string;
  run_id: string;
  sha256: string;
  size_bytes: number;
  restored_at: string;
}

export type Outcome = 'restored' | 'redeployed' | 'failed' | 'skipped';
export interface RecoveryItem {
  kind: 'database' | 'app';
  id: string;
  name: string;
  outcome: Outcome;
  detail: string;
}
export interface RecoveryReport {
  started_at: string;
  finished_at: string | null;
  items: RecoveryItem[];
}

const reason = (e: unknown) =>
  (e instanceof Error ? e.message : String(e)).replace(/\s+/g, ' ').slice(0, 400);

export function readRecoveryMarker(dataDir: string): RecoveryMarker | null {
  try {
    const m = JSON.parse(readFileSync(join(dataDir, RECOVERY_MARKER), 'utf8')) as RecoveryMarker;
    return typeof m.run_id === 'string' && typeof m.sha256 === 'string' ? m : null;
  } catch {
    return null;
  }
}

export async function readRecoveryReport(env: Pick<Services, 'db'>): Promise<RecoveryReport | null> {
  const value = await readSetting(env.db, RECOVERY_SETTING);
  return value !== null ? (JSON.parse(value) as RecoveryReport) : null;
}

/**
 * The report as a caller reaching `apps` (null: every app) may read it: only the items of those
 * apps (an item whose app is gone since is nobody's to read but an unlimited caller's).
 */
export async function recoveryReportFor(
  env: Pick<Services, 'db'>,
  apps: ReadonlySet<string> | null,
): Promise<RecoveryReport | null> {
  const report = await readRecoveryReport(env);
  if (!report || apps === null) return report;
  const owners = await appsOfRecoveryItems(env.db, report.items);
  const items = report.items.filter((i) => {
    const app = owners.get(`${i.kind}\u0000${i.id}`);
    return app !== undefined && apps.has(app);
  });
  return { ...report, items };
}

async function saveReport(env: Services, report: RecoveryReport): Promise<void> {
  const value = JSON.stringify(report);
  await writeSetting(env.db, RECOVERY_SETTING, value);
}

async function exists(env: Services, kind: 'volume' | 'container', name: string): Promise<boolean> {
  return guard(env.engine, async () => {
    try {
      await (kind === 'volume'
        ? env.engine.docker.getVolume(name).inspect()
        : env.engine.docker.getContainer(name).inspect());
      return true;
    } catch (e) {
      if (isNotFound(e)) return false;
      throw e;
    }
  });
}

async function recoverDatabase(env: Services, row: AppDatabaseTable, appName: string): Promise<RecoveryItem> {
  const item = (outcome: Outcome, detail: string): RecoveryItem => ({
    kind: 'database',
    id: row.id,
    name: `${appName}/${row.engine}:${row.host}`,
    outcome,
    detail,
  });
  try {
    const volume = await exists(env, 'volume', row.volume);
    const container = await exists(env, 'container', row.container);
    if (volume && container) return item('skipped', 'its container and volume are there');
    if (container)
      await guard(env.engine, () => env.engine.docker.getContainer(row.container).remove({ force: true }));
    await createDbContainer(env, appName, row, dbSecrets(env, row));
    await waitHealthy(env.engine, row.container);
    await setDatabaseStatus(env.db, row.id, 'ready', null);
    if (volume) return item('redeployed', 'its container was created again on its volume');
    const errors: string[] = [];
    // The newest artifact that can be fetched: a local one went with the lost data directory.
    for (const run of await keptRunsOfDatabase(env.db, row, 3)) {
      try {
        await restoreDatabaseFromRun(env, row, run);
        return item(
          'restored',
          `volume re-created and restored from backup run ${run.id} of ${run.started_at}`,
        );
      } catch (e) {
        errors.push(`run ${run.id}: ${reason(e)}`);
      }
    }
    return item(
      'failed',
      `the volume was lost and ${errors.length ? `no backup could be restored (${errors.join('; ').slice(0, 600)})` : 'it has no successful backup'}: re-provisioned empty`,
    );
  } catch (e) {
    return item('failed', reason(e));
  }
}

async function waitDeployment(env: Services, id: string): Promise<{ status: string; error: string | null }> {
  const deadline = Date.now() + (env.config.deploy.timeoutSeconds + 120) * 1000;
  for (;;) {
    const d = await getDeploymentRow(env.db, id);
    if (!d) return { status: 'failed', error: 'the deployment disappeared' };
    if (isTerminal(d.status)) return { status: d.status, error: d.error };
    if (Date.now() > deadline) return { status: 'failed', error: 'it did not finish in time' };
    await new Promise((r) => setTimeout(r, 500));
  }
}

/**
 * The report item of one app's comeback: `done` for one already settled, `after` for one that
 * settles when deployment `depId` (brought back `how`) ends.
 */
function reporter(env: Services, app: { id: string; name: string }) {
  const item = (outcome: Outcome, detail: string): RecoveryItem => ({
    kind: 'app',
    id: app.id,
    name: app.name,
    outcome,
    detail,
  });
  const after = (depId: string, how: string) => async () => {
    const r = await waitDeployment(env, depId);
    return r.status === 'succeeded'
      ? item('redeployed', `${how}: deployment ${depId}`)
      : item('failed', `deployment ${depId} ${r.status}: ${r.error ?? ''}`.trim());
  };
  return { item, done: (i: RecoveryItem) => async () => i, after };
}

/** Starts the app's comeback; the promise settles with its report item once the deployment ended. */
async function recoverApp(env: Services, appId: string): Promise<() => Promise<RecoveryItem>> {
  const app = await getApp(env.db, appId);
  const { item, done, after } = reporter(env, app);
  try {
    if ((await listAppContainers(env.engine, app.name)).length)
      return done(item('skipped', 'its containers are there'));
    const last = await lastSucceeded(env.db, app.id);
    if (!last) return done(item('skipped', 'it has no successful deployment to bring back'));
    const images = last.images ? (JSON.parse(last.images) as Record<string, string>) : {};
    let how: string;
    let depId: string;
    if (Object.keys(images).length && last.spec && (await imagesPresent(env.engine, images)).length === 0) {
      depId = (await env.deployments.rollback(app, last.id)).id;
      how = `from the images of deployment ${last.id}`;
    } else if (app.source.type === 'git') {
      // The version that ran, not whatever the branch points at now: the recorded commit, on its ref.
      const ref = last.ref ?? app.source.branch;
      const pin = last.commit_sha;
      depId = (await env.deployments.enqueue(app, { trigger: 'manual', ref, pin })).deployment.id;
      how = pin
        ? `rebuilt from its source at commit ${pin.slice(0, 12)} of ${ref}, the commit of deployment ${last.id} (its images are not on this engine)`
        : `rebuilt from the head of ${ref} (deployment ${last.id} recorded no commit; its images are not on this engine)`;
    } else {
      depId = (await env.deployments.enqueue(app, { trigger: 'manual', ref: null })).deployment.id;
      how = `from its ${app.source.type} source (the images of deployment ${last.id} are not on this engine)`;
    }
    return after(depId, how);
  } catch (e) {
    return done(item('failed', reason(e)));
  }
}

/**
 * A preview comes back as a preview, through lib/previews: rebuilt from its branch's head with its
 * app's variables and preview settings as they are now, its own databases made again by that
 * deployment (loaded with the app's latest backup under `latest_backup`). An expired one is left
 * to the sweep that removes it.
 */
async function recoverPreview(env: Services, row: PreviewTable): Promise<() => Promise<RecoveryItem>> {
  const child = await getApp(env.db, row.target_app_id, { includePreview: true });
  const { item, done, after } = reporter(env, child);
  try {
    if (Date.parse(row.expires_at) <= env.now())
      return done(item('skipped', `preview ${row.number} has expired: the next sweep removes it`));
    if ((await listAppContainers(env.engine, child.name)).length)
      return done(item('skipped', 'its containers are there'));
    if (!(await hasSucceeded(env.db, child.id)))
      return done(item('skipped', 'it has no successful deployment to bring back'));
    const parent = await getApp(env.db, row.app_id);
    const source = child.source.type === 'git' ? child.source : null;
    const fork =
      source && parent.source.type === 'git' && source.repo_url !== parent.source.repo_url
        ? source.repo_url
        : null;
    const preview = await deployPreview(env, parent, {
      number: row.number,
      branch: row.branch,
      title: row.title,
      commit: row.commit_sha,
      repoUrl: fork,
      trigger: 'manual',
    });
    const depId = preview.deployment_id!;
    const how = `as preview ${row.number} of app ${parent.name}, from the head of ${row.branch}`;
    return after(depId, how);
  } catch (e) {
    return done(item('failed', `preview ${row.number}: ${reason(e)}`));
  }
}

/**
 * A preview's own database whose volume was lost is removed rather than made again empty here: the
 * preview's deployment makes it again as the preview settings say (recoverPreview).
 */
async function recoverPreviewDatabase(
  env: Services,
  row: AppDatabaseTable,
  appName: string,
): Promise<RecoveryItem> {
  if (await exists(env, 'volume', row.volume).catch(() => true)) return recoverDatabase(env, row, appName);
  const name = `${appName}/${row.engine}:${row.host}`;
  try {
    await deleteDatabase(env, row.app_id, row.id, false);
    return {
      kind: 'database',
      id: row.id,
      name,
      outcome: 'skipped',
      detail: "a preview's database whose volume was lost: removed; the preview's redeploy makes it again",
    };
  } catch (e) {
    return { kind: 'database', id: row.id, name, outcome: 'failed', detail: reason(e) };
  }
}

/** Runs the recovery the marker asks for, keeps its report, then removes the marker. */
export async function runRecovery(env: Services): Promise<RecoveryReport> {
  const report: RecoveryReport = {
    started_at: new Date(env.now()).toISOString(),
    finished_at: null,
    items: [],
  };
  await saveReport(env, report);
  env.log.info({}, 'recovering the restored instance: databases, then apps');
  const apps = await recoverableApps(env.db);
  const names = new Map(apps.map((a) => [a.id, a.name]));
  const previews = new Map((await allPreviewRows(env.db)).map((p) => [p.target_app_id, p]));
  const dbs = await allDatabaseRows(env.db);
  // Databases first: the apps connect to them as they start.
  for (const row of dbs) {
    const name = names.get(row.app_id);
    if (!name) continue;
    report.items.push(
      previews.has(row.app_id)
        ? await recoverPreviewDatabase(env, row, name)
        : await recoverDatabase(env, row, name),
    );
    await saveReport(env, report);
  }
  const pending = [];
  for (const a of apps) {
    const preview = a.parent_app_id ? previews.get(a.id) : undefined;
    // A preview's row without its preview (a removal cut short) is no app to bring back.
    if (a.parent_app_id && !preview) continue;
    pending.push(preview ? await recoverPreview(env, preview) : await recoverApp(env, a.id));
  }
  for (const wait of pending) {
    report.items.push(await wait());
    await saveReport(env, report);
  }
  report.finished_at = new Date(env.now()).toISOString();
  await saveReport(env, report);
  for (const i of report.items)
    env.log[i.outcome === 'failed' ? 'warn' : 'info'](
      { kind: i.kind, id: i.id, name: i.name, outcome: i.outcome },
      `recovery: ${i.kind} ${i.name} ${i.outcome}: ${i.detail}`,
    );
  rmSync(join(env.config.dataDir, RECOVERY_MARKER), { force: true });
  return report;
}
