import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { appJobs, createJob, viewJobs } from '#lib/jobs/jobs.js';
import { items } from '#lib/api/common.js';
import { jobBody, jobFields, jobSchema } from '#lib/api/jobs.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's scheduled jobs, each with its schedule in words, its next due time and its last run",
    params: appParams,
    responses: { 200: items(jobSchema) },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, { items: await appJobs(env, params.id) });
  },
);

export const POST = route(
  {
    permission: 'app.deploy',
    summary:
      "Add a scheduled job: a command run in a one-off container of a service's current deployment at each due time of its schedule",
    params: appParams,
    body: z.strictObject({
      name: jobFields.name,
      schedule: jobFields.schedule,
      command: jobFields.command,
      service: jobFields.service.optional(),
      timezone: jobFields.timezone.optional(),
      timeout_s: jobFields.timeout_s.optional(),
      concurrency: jobFields.concurrency.optional(),
      enabled: jobFields.enabled.optional(),
    }),
    responses: { 201: jobBody },
    audit: { action: 'app.job_created', state: { kind: 'job' } },
  },
  async (_req, { env, params, body, reply, audit }) => {
    await getApp(env.db, params.id);
    const job = await createJob(env, params.id, body);
    audit({ target: job.id, detail: { app_id: params.id, name: job.name } });
    const [view] = await viewJobs(env, [job]);
    return reply(201, { job: view! });
  },
);
