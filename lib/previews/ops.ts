// Previews as deploy targets. A preview is a child app row (`apps.parent_app_id`) named
// `<app>-pr-<n>`: every engine object the pipeline makes for it (containers, the `svc-<app>-pr-<n>`
// network, volumes, images, the working copy) carries that name, so it shares nothing with the
// app's production stack, and removing it is deleting that child app. What differs from a plain
// deployment is set on the child before each deploy: its source (the pull request's branch, or a
// fork's repository), its variables (only `inherit_env` of the app's, plus the preview-only ones)
// its service settings (the app's ports and health paths) and its idle time before it sleeps.
import type { Services } from '../http/handler.js';
import type { App, AppSource } from '../apps/model.js';
import { APP_NAME } from '../apps/model.js';
import { envBinding, previewEnvBinding } from '../apps/env.js';
import { activeDeploymentIds, getApp, insertApp } from '../apps/store.js';
import { deleteApp } from '../apps/ops.js';
import { publishAppEvent } from '../apps/events.js';
import { getBaseDomain } from '../domains/store.js';
import { checkRef, checkRepoUrl } from '../git/validate.js';
import { ACTIVE } from '../apps/deployment.js';
import { newId } from '../crypto/random.js';
import { isConstraintViolation, nowIso } from '../db/index.js';
import type { PreviewTable } from '../db/schema.js';
import { HttpError, badRequest, conflict } from '../http/errors.js';
import { MAX_NUMBER, previewAppName, previewLabel, toPreview, type Preview } from './model.js';
import {
  childStatus,
  copyServiceSettings,
  databaseVariables,
  deleteChildRow,
  deletePreviewRow,
  envRowsOf,
  expiredPreviews,
  getSettings,
  insertPreviewRow,
  listPreviewRows,
  nextFreeNumber,
  previewByNumber,
  previewEnvRows,
  replaceChildEnv,
  updateChild,
  updatePreviewRow,
} from './store.js';

export interface PreviewRequest {
  /** The pull request's number; none: the next free one from 1000. */
  number?: number | null;
  branch: string;
  title?: string | null;
  /** The commit the forge announced (informational: the branch's head at fetch time deploys). */
  commit?: string | null;
  /** A fork's repository to clone instead of the app's (only when from_forks allows it). */
  repoUrl?: string | null;
  trigger: 'manual' | 'push';
  deliveryId?: string | null;
}

type PreviewEnv = Services;

async function view(
  env: Pick<Services, 'db' | 'config'>,
  parent: Pick<App, 'name'>,
  row: PreviewTable,
): Promise<Preview> {
  const [base, child] = await Promise.all([
    getBaseDomain(env.db, env.config.baseDomain),
    childStatus(env.db, row.target_app_id),
  ]);
  return toPreview(row, child ?? 'created', base, parent.name);
}

export async function listPreviews(env: Pick<Services, 'db' | 'config'>, parent: App): Promise<Preview[]> {
  return Promise.all((await listPreviewRows(env.db, parent.id)).map((r) => view(env, parent, r)));
}

export async function previewView(
  env: Pick<Services, 'db' | 'config'>,
  parent: App,
  row: PreviewTable,
): Promise<Preview> {
  return view(env, parent, row);
}

/**
 * Builds and deploys the preview for `req.number` (made first when it does not exist; the oldest
 * preview goes when the app has `max` already). An update of an existing one redeploys it from
 * its branch's new head with the variables as they are now.
 */
export async function deployPreview(env: PreviewEnv, parent: App, req: PreviewRequest): Promise<Preview> {
  if (parent.source.type !== 'git')
    throw badRequest(`Previews build branches: app "${parent.name}" does not deploy from git`, [
      { field: 'branch', message: 'git apps only' },
    ]);
  const settings = await getSettings(env.db, parent.id);
  if (!settings.enabled)
    throw conflict(
      `Previews are off for app "${parent.name}": PUT /api/apps/${parent.id}/previews/settings {"enabled": true}`,
    );
  const ref = checkRef(req.branch);
  if (!ref.ok) throw badRequest(`Invalid branch: ${ref.reason}`, [{ field: 'branch', message: ref.reason }]);
  if (req.repoUrl != null) {
    const u = checkRepoUrl(req.repoUrl);
    if (!u.ok)
      throw badRequest(`Invalid repository of the pull request: ${u.reason}`, [
        { field: 'repo_url', message: u.reason },
      ]);
  }
  let number = req.number ?? (await nextFreeNumber(env.db, parent.id));
  const checkName = (num: number) => {
    if (!Number.isInteger(num) || num < 1 || num > MAX_NUMBER)
      throw badRequest('number must be a whole number from 1', [
        { field: 'number', message: 'out of range' },
      ]);
    const name = previewAppName(parent.name, num);
    if (!APP_NAME.test(name) || previewLabel(parent.name, num).length > 63)
      throw badRequest(
        `The preview's name "${name}" would be longer than 63 characters: the app's name is too long for previews`,
        [{ field: 'number', message: 'name too long' }],
      );
    return name;
  };
  checkName(number);
  const now = env.now();
  const source: AppSource = {
    ...parent.source,
    branch: req.branch,
    ...(req.repoUrl ? { repo_url: req.repoUrl } : {}),
  };
  const expires = nowIso(now + settings.ttl_hours * 3600_000);
  let row = await previewByNumber(env.db, parent.id, number);
  let made = false;
  if (!row) {
    // Room first: the oldest previews go until this one fits under `max`.
    const rows = (await listPreviewRows(env.db, parent.id)).sort(
      (a, b) => a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id),
    );
    while (rows.length >= settings.max) {
      const oldest = rows.shift()!;
      env.log.info(
        { app: parent.name, preview: oldest.number },
        'preview removed: the app has its maximum number of previews',
      );
      await removePreview(env, oldest);
    }
    // A number handed out by default is the lowest free one once room was made.
    if (req.number == null) number = await nextFreeNumber(env.db, parent.id);
    const child = await insertApp(env.db, checkName(number), source, now, parent.id);
    // Previews sleep by default (settings): the Sleeper treats the child like any app with the setting.
    await updateChild(env.db, child.id, { sleep_after_minutes: settings.sleep_after_minutes });
    row = {
      id: newId(now),
      app_id: parent.id,
      target_app_id: child.id,
      number,
      title: req.title ?? null,
      branch: req.branch,
      commit_sha: req.commit ?? null,
      deployment_id: null,
      created_at: nowIso(now),
      updated_at: nowIso(now),
      expires_at: expires,
    };
    try {
      await insertPreviewRow(env.db, row);
    } catch (e) {
      await deleteChildRow(env.db, child.id);
      if (isConstraintViolation(e))
        throw conflict(`Preview ${number} of app "${parent.name}" is being made already`);
      throw e;
    }
    made = true;
  } else {
    await updateChild(env.db, row.target_app_id, {
      source: JSON.stringify(source),
      sleep_after_minutes: settings.sleep_after_minutes,
      updated_at: nowIso(now),
    });
  }
  await prepareChild(env, parent, row.target_app_id, settings.inherit_env);
  // Its own databases (settings.database) are made by the deployment itself, before anything
  // reads its env (previews/databases.ts): this answer does not wait for them.
  const child = await getApp(env.db, row.target_app_id, { includePreview: true });
  let deploymentId: string;
  try {
    const { deployment } = await env.deployments.enqueue(child, {
      trigger: req.trigger,
      ref: req.branch,
      deliveryId: req.deliveryId ?? null,
      commit: req.commit ?? null,
    });
    deploymentId = deployment.id;
  } catch (e) {
    // A preview made for this request and never deployed is not left behind.
    if (made) await removePreview(env, row).catch(() => {});
    throw e;
  }
  const patch = {
    title: req.title ?? row.title,
    branch: req.branch,
    commit_sha: req.commit ?? null,
    deployment_id: deploymentId,
    updated_at: nowIso(now),
    expires_at: expires,
  };
  await updatePreviewRow(env.db, row.id, patch);
  if (made)
    publishAppEvent(env.bus, {
      type: 'status',
      app_id: child.id,
      app: child.name,
      status: child.status,
      parent_app_id: parent.id,
      preview_number: row.number,
    });
  return view(env, parent, { ...row, ...patch });
}

/**
 * The child's variables and service settings, from the app's as they are now: only the keys in
 * `inherit_env` of the app's own (sealed again under the child's binding), then the preview-only
 * ones over them. Nothing else of the app's env reaches the preview: never the URL variable of one
 * of the app's managed databases (it names production's database and carries its password), and
 * the URL variables of the preview's own databases are kept as they are.
 */
async function prepareChild(
  env: Pick<Services, 'db' | 'sealer'>,
  parent: App,
  childId: string,
  inherit: readonly string[],
): Promise<void> {
  await env.db.transaction().execute(async (tx) => {
    const kept = await databaseVariables(tx, childId);
    const withheld = new Set([...kept, ...(await databaseVariables(tx, parent.id))]);
    const values = new Map<string, { secret: number; value: string }>();
    if (inherit.length) {
      for (const r of await envRowsOf(tx, parent.id, inherit))
        values.set(r.key, {
          secret: r.secret,
          value: env.sealer.open(r.sealed, envBinding(parent.id, r.key)),
        });
    }
    for (const r of await previewEnvRows(tx, parent.id)) {
      values.set(r.key, {
        secret: r.secret,
        value: env.sealer.open(r.sealed, previewEnvBinding(parent.id, r.key)),
      });
    }
    for (const k of withheld) values.delete(k);
    const rows = [...values].map(([key, v]) => ({
      app_id: childId,
      key,
      secret: v.secret,
      sealed: env.sealer.seal(v.value, envBinding(childId, key)),
    }));
    await replaceChildEnv(tx, childId, kept, rows);
    await copyServiceSettings(tx, parent.id, childId);
  });
}

/**
 * Removes a preview with everything it made: its running deployment is canceled, then its child
 * app is deleted like any app (containers, network, volumes, images, working copy, rows, routes).
 */
export async function removePreview(env: PreviewEnv, row: PreviewTable): Promise<void> {
  const child = await getApp(env.db, row.target_app_id, {
    includeDeleting: true,
    includePreview: true,
  }).catch(() => null);
  if (child) {
    for (const id of await activeDeploymentIds(env.db, child.id, ACTIVE))
      await env.deployments.cancel(child, id).catch(() => {});
    await deleteApp(env, child.id, { volumes: true });
  }
  await deletePreviewRow(env.db, row.id);
}

export async function removePreviewByNumber(
  env: PreviewEnv,
  parent: App,
  number: number,
): Promise<PreviewTable | null> {
  const row = await previewByNumber(env.db, parent.id, number);
  if (row) await removePreview(env, row);
  return row;
}

/** Every preview of an app, before the app itself is deleted. */
export async function removeAppPreviews(env: PreviewEnv, parentId: string): Promise<number> {
  const rows = await listPreviewRows(env.db, parentId);
  for (const r of rows) await removePreview(env, r);
  return rows.length;
}

/** Removes previews whose time to live has passed (`now` injectable for tests). */
export async function sweepExpired(env: PreviewEnv, now = env.now()): Promise<string[]> {
  const gone: string[] = [];
  for (const row of await expiredPreviews(env.db, now)) {
    try {
      await removePreview(env, row);
      gone.push(row.id);
    } catch (e) {
      if (!(e instanceof HttpError))
        env.log.warn(
          { err: String(e), preview: row.id },
          'expired preview not removed; retried at the next sweep',
        );
    }
  }
  return gone;
}
