import { getApp } from '#lib/apps/store.js';
import { getJob } from '#lib/jobs/jobs.js';
import { listRuns } from '#lib/jobs/store.js';
import { page } from '#lib/api/common.js';
import { runSchema } from '#lib/api/jobs.js';
import { route } from '#lib/http/route.js';
import { jobParams, pageQuery } from '../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary:
      "A job's runs, newest first (skipped ones too, with the reason); page with ?cursor=<next_cursor>",
    params: jobParams,
    query: pageQuery,
    responses: { 200: page(runSchema) },
  },
  async (_req, { env, params, query, reply }) => {
    await getApp(env.db, params.id);
    await getJob(env, params.id, params.jid);
    return reply(200, await listRuns(env.db, { appId: params.id, jobId: params.jid }, query));
  },
);
