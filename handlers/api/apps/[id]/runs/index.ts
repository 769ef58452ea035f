import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { maskedCommand, runCommand } from '#lib/jobs/jobs.js';
import { listRuns } from '#lib/jobs/store.js';
import { page } from '#lib/api/common.js';
import { commandSchema, commandTimeout, runBody, runSchema } from '#lib/api/jobs.js';
import { SERVICE_NAME } from '#lib/compose/index.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';
import { pageQuery } from '../jobs/_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary:
      'Every run of an app (jobs, one-off commands, release commands), newest first; page with ?cursor=',
    params: appParams,
    query: pageQuery,
    responses: { 200: page(runSchema) },
  },
  async (_req, { env, params, query, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, await listRuns(env.db, { appId: params.id }, query));
  },
);

export const POST = route(
  {
    permission: 'app.deploy',
    stepUp: true,
    summary:
      "Run a one-off command in a new container of a service's current deployment (its image, environment, network and limits); its output streams on run:<id>",
    params: appParams,
    body: z.strictObject({
      command: commandSchema,
      service: z.string().regex(SERVICE_NAME, 'not a service name').nullable().optional(),
      timeout_s: commandTimeout.optional(),
    }),
    responses: { 202: runBody },
    audit: { action: 'app.command_run', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const app = await getApp(env.db, params.id);
    const run = await runCommand(env, app, body);
    audit({
      detail: { run: run.id, command: await maskedCommand(env, app.id, body.command), service: run.service },
    });
    return reply(202, { run });
  },
);
