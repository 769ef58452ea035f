import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { deleteConfig } from '#lib/backups/index.js';
import { getConfig } from '#lib/backups/store.js';
import { patchNeedsStepUp, updateConfig } from '#lib/backups/config.js';
import { configView } from '#lib/backups/views.js';
import { route } from '#lib/http/route.js';
import { backupConfigSchema } from '#lib/api/backups.js';
import { configParams, patchBody } from '../_lib.js';

const one = z.object({ backup: backupConfigSchema });

export const GET = route(
  {
    permission: 'app.read',
    summary: 'One backup configuration of an app',
    params: configParams,
    responses: { 200: one },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { backup: await configView(env, await getConfig(env.db, params.id, params.bid)) });
  },
);

export const PATCH = route(
  {
    permission: 'app.admin',
    summary: 'Change a backup configuration',
    stepUpWhen: 'the change lowers keep_last or changes destination or source',
    params: configParams,
    body: patchBody,
    responses: { 200: one },
    audit: { action: 'backup.config_updated', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit, requireStepUp }) => {
    await getApp(env.db, params.id);
    // Fewer artifacts kept (the next run deletes the rest), or artifacts going elsewhere or
    // holding other data: as consequential as deleting the config, which needs a step-up.
    if (patchNeedsStepUp(await getConfig(env.db, params.id, params.bid), body)) requireStepUp();
    const row = await updateConfig(env, params.id, params.bid, body);
    audit({ detail: { backup: row.id, fields: Object.keys(body) } });
    return reply(200, { backup: await configView(env, row) });
  },
);

export const DELETE = route(
  {
    permission: 'app.admin',
    summary: 'Delete a backup configuration',
    stepUp: true,
    params: configParams,
    responses: { 204: null },
    audit: { action: 'backup.config_deleted', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    await getApp(env.db, params.id);
    audit({ detail: { backup: params.bid } });
    await deleteConfig(env, params.id, params.bid);
    return reply(204);
  },
);
