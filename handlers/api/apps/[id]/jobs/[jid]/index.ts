import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { deleteJob, getJob, updateJob, viewJobs } from '#lib/jobs/jobs.js';
import { jobBody, jobFields } from '#lib/api/jobs.js';
import { route } from '#lib/http/route.js';
import { jobParams } from '../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'One job with its next due time and its last run',
    params: jobParams,
    responses: { 200: jobBody },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    const [job] = await viewJobs(env, [await getJob(env, params.id, params.jid)]);
    return reply(200, { job: job! });
  },
);

export const PATCH = route(
  {
    permission: 'app.deploy',
    summary: 'Change a job; a new schedule or time zone, or enabling it again, counts its due times from now',
    params: jobParams,
    body: z
      .strictObject({
        name: jobFields.name.optional(),
        schedule: jobFields.schedule.optional(),
        command: jobFields.command.optional(),
        service: jobFields.service.optional(),
        timezone: jobFields.timezone.optional(),
        timeout_s: jobFields.timeout_s.optional(),
        concurrency: jobFields.concurrency.optional(),
        enabled: jobFields.enabled.optional(),
      })
      .refine((b) => Object.values(b).some((v) => v !== undefined), 'give at least one field to change'),
    responses: { 200: jobBody },
    audit: {
      action: 'app.job_updated',
      target: (c) => c.params.jid,
      state: { kind: 'job', id: (c) => c.params.jid },
    },
  },
  async (_req, { env, params, body, reply }) => {
    await getApp(env.db, params.id);
    const [job] = await viewJobs(env, [await updateJob(env, params.id, params.jid, body)]);
    return reply(200, { job: job! });
  },
);

export const DELETE = route(
  {
    permission: 'app.deploy',
    summary: 'Delete a job: its runs in flight are canceled, its history goes with it',
    params: jobParams,
    responses: { 204: null },
    audit: {
      action: 'app.job_deleted',
      target: (c) => c.params.jid,
      state: { kind: 'job', id: (c) => c.params.jid },
    },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    await deleteJob(env, params.id, params.jid);
    return reply(204);
  },
);
