import { getApp } from '#lib/apps/store.js';
import { getJob, runJobNow } from '#lib/jobs/jobs.js';
import { runBody } from '#lib/api/jobs.js';
import { route } from '#lib/http/route.js';
import { jobParams } from '../_lib.js';

export const POST = route(
  {
    permission: 'app.deploy',
    summary:
      'Run a job now (409 when the app has never deployed, or while a run of it is in flight and its concurrency is forbid)',
    params: jobParams,
    responses: { 202: runBody },
    audit: { action: 'app.job_run', target: (c) => c.params.jid },
  },
  async (_req, { env, params, reply, audit }) => {
    const app = await getApp(env.db, params.id);
    const job = await getJob(env, params.id, params.jid);
    const run = await runJobNow(env, app, job);
    audit({ detail: { job: job.id, name: job.name, run: run.id } });
    return reply(202, { run });
  },
);
