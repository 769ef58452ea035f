import { z } from 'zod';
import { badRequest } from '#lib/http/errors.js';
import { buildLimitsSchema, sleepAfterSchema, sourceSchema } from '#lib/apps/schemas.js';
import { getApp, updateApp } from '#lib/apps/store.js';
import { deleteApp } from '#lib/apps/ops.js';
import { removeAppPreviews } from '#lib/previews/ops.js';
import { currentStatuses } from '#lib/apps/status.js';
import { appSchema, appUrlSchema } from '#lib/api/apps.js';
import { proxyHealthSchema } from '#lib/api/instance.js';
import { appUrls } from '#lib/proxy/urls.js';
import { proxyHealth } from '#lib/proxy/health.js';
import { commandSchema } from '#lib/api/jobs.js';
import { checkCommand } from '#lib/jobs/jobs.js';
import { RELEASE_TIMEOUT_MAX_S } from '#lib/apps/model.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../_lib.js';

const appBody = z.object({ app: appSchema });

export const GET = route(
  {
    permission: 'app.read',
    summary: 'One app with its current status, where it answers and the proxy state',
    params: appParams,
    responses: {
      200: appBody.extend({ urls: z.array(appUrlSchema), proxy: proxyHealthSchema }),
    },
  },
  async (_req, { env, params, reply }) => {
    const { deleting: _d, ...stored } = await getApp(env.db, params.id);
    const [[app], urls] = await Promise.all([currentStatuses(env, [stored]), appUrls(env, [stored.id])]);
    return reply(200, { app: app!, urls: urls.get(stored.id) ?? [], proxy: proxyHealth(env.edge.proxy) });
  },
);

export const PATCH = route(
  {
    permission: 'app.admin',
    summary:
      "Change an app's source (with how it is built), its build limits (null: none), its sleep setting (null: never sleeps) or its release command (null: none)",
    params: appParams,
    body: z.strictObject({
      name: z.string().optional(),
      source: sourceSchema.optional(),
      build_limits: buildLimitsSchema.nullable().optional(),
      sleep_after_minutes: sleepAfterSchema.nullable().optional(),
      release_command: commandSchema.nullable().optional(),
      release_timeout_s: z.number().int().min(1).max(RELEASE_TIMEOUT_MAX_S).nullable().optional(),
    }),
    responses: { 200: appBody },
    audit: {
      action: 'app.updated',
      target: (c) => c.params.id,
      state: { kind: 'app', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, body, reply }) => {
    const current = await getApp(env.db, params.id);
    // The name is in every container, network and volume name: renaming would orphan them.
    if (body.name !== undefined && body.name !== current.name)
      throw badRequest('An app cannot be renamed; export it and import it under the new name', [
        { field: 'name', message: 'immutable' },
      ]);
    if (body.release_command) checkCommand(body.release_command, 'release_command');
    const updated = await updateApp(
      env.db,
      params.id,
      {
        source: body.source,
        build_limits: body.build_limits,
        sleep_after_minutes: body.sleep_after_minutes,
        release_command: body.release_command,
        release_timeout_s: body.release_timeout_s,
      },
      env.now(),
    );
    // Turned off while it sleeps: it wakes now, since nothing would put it back to sleep later.
    if (body.sleep_after_minutes === null) await env.sleeper.wake(params.id).catch(() => {});
    const [app] = await currentStatuses(env, [updated]);
    return reply(200, { app: app! });
  },
);

export const DELETE = route(
  {
    permission: 'app.admin',
    summary:
      'Delete an app: its containers, networks, images, secrets and rows (volumes only with ?volumes=true)',
    stepUp: true,
    params: appParams,
    query: z.object({ volumes: z.enum(['true', 'false']).default('false') }),
    responses: {
      200: z.object({
        deleted: z.literal(true),
        removed_containers: z.array(z.string()),
        removed_volumes: z.array(z.string()),
        kept_volumes: z.array(z.string()),
        detached_containers: z.array(z.string()),
      }),
    },
    audit: { action: 'app.deleted', target: (c) => c.params.id },
  },
  async (_req, { env, params, query, reply, audit }) => {
    const volumes = query.volumes === 'true';
    audit({ detail: { volumes } });
    // Its previews first: their own rows would go with the app's, their engine objects would not.
    await getApp(env.db, params.id, { includeDeleting: true });
    await removeAppPreviews(env, params.id);
    const removed = await deleteApp(env, params.id, { volumes });
    return reply(200, {
      deleted: true,
      removed_containers: removed.containers,
      removed_volumes: removed.removedVolumes,
      kept_volumes: removed.keptVolumes,
      detached_containers: removed.detached,
    });
  },
);
