import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { getRun } from '#lib/backups/store.js';
import { runView } from '#lib/backups/views.js';
import { removeRunArtifact } from '#lib/backups/retention.js';
import { route } from '#lib/http/route.js';
import { backupRunSchema } from '#lib/api/backups.js';
import { runParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'One backup run',
    params: runParams,
    responses: { 200: z.object({ run: backupRunSchema }) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { run: runView(await getRun(env.db, params.id, params.rid)) });
  },
);

export const DELETE = route(
  {
    permission: 'app.admin',
    summary: "Remove a backup run's artifact from its destination",
    description:
      'The run stays, marked removed; its download and restore then answer 410. 409 while the run is running.',
    stepUp: true,
    params: runParams,
    responses: { 204: null },
    audit: { action: 'backup.artifact_removed', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    await getApp(env.db, params.id);
    const run = await removeRunArtifact(env, params.id, params.rid);
    audit({ detail: { backup: run.backup_id, run: run.id } });
    return reply(204);
  },
);
