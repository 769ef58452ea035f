import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { listConfigs } from '#lib/backups/index.js';
import { createConfig } from '#lib/backups/config.js';
import { configView } from '#lib/backups/views.js';
import { route } from '#lib/http/route.js';
import { backupConfigSchema } from '#lib/api/backups.js';
import { items } from '#lib/api/common.js';
import { appParams } from '../../_lib.js';
import { createBody } from './_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's backup configurations",
    params: appParams,
    responses: { 200: items(backupConfigSchema) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { items: await listConfigs(env, params.id) });
  },
);

export const POST = route(
  {
    permission: 'app.admin',
    summary: 'Add a backup configuration (a database or a named volume, on a schedule)',
    params: appParams,
    body: createBody,
    responses: { 201: z.object({ backup: backupConfigSchema }) },
    audit: { action: 'backup.config_created', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit }) => {
    await getApp(env.db, params.id);
    const row = await createConfig(env, params.id, body);
    audit({
      detail: {
        backup: row.id,
        source: body.source,
        schedule: row.schedule,
        destination: body.destination?.type ?? 'local',
      },
    });
    return reply(201, { backup: await configView(env, row) });
  },
);
