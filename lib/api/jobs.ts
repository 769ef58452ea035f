// Wire shapes of jobs, runs and their output.
import { z } from 'zod';
import { SERVICE_NAME } from '../compose/index.js';
import { JOB_CONCURRENCY, JOB_NAME, LIMITS, RUN_STATUSES, RUN_TRIGGERS } from '../jobs/model.js';
import { named, ts } from './common.js';

export const commandSchema = named(
  'Command',
  z
    .array(z.string().max(LIMITS.command.arg))
    .min(1)
    .max(LIMITS.command.args)
    .describe(
      'Exec form: the program and its arguments, run as they are (no shell, not through the image entrypoint)',
    ),
);

export const runSchema = named(
  'Run',
  z.object({
    id: z.string(),
    app_id: z.string(),
    job_id: z.string().nullable().describe('null: a one-off command or a release command'),
    command: z.array(z.string()),
    service: z.string().nullable(),
    deployment_id: z.string().nullable().describe('The deployment whose image and environment it runs'),
    status: z.enum(RUN_STATUSES),
    reason: z.string().nullable().describe('Why it was skipped, failed, timed out, canceled or interrupted'),
    exit_code: z.number().int().nullable(),
    trigger: z.enum(RUN_TRIGGERS),
    timeout_s: z.number().int(),
    scheduled_for: ts.nullable().describe('The due time of a scheduled run'),
    created_at: ts,
    started_at: ts.nullable(),
    finished_at: ts.nullable(),
  }),
  'One run of a job, a one-off command or a release command, in a one-off container',
);

export const runBody = named('RunBody', z.object({ run: runSchema }));

export const jobSchema = named(
  'Job',
  z.object({
    id: z.string(),
    app_id: z.string(),
    name: z.string(),
    schedule: z.string().describe('5-field cron expression'),
    schedule_description: z.string().describe('The schedule in words, with its time zone'),
    timezone: z.string(),
    command: z.array(z.string()),
    service: z.string().nullable().describe("null: the app's main service"),
    timeout_s: z.number().int(),
    concurrency: z.enum(JOB_CONCURRENCY),
    enabled: z.boolean(),
    next_run_at: ts.nullable().describe('null while disabled'),
    last_run: runSchema.nullable(),
    created_at: ts,
    updated_at: ts,
  }),
);

export const jobBody = named('JobBody', z.object({ job: jobSchema }));

const timeout = z.number().int().min(LIMITS.timeoutS.min).max(LIMITS.timeoutS.max);

export const jobFields = {
  name: z.string().regex(JOB_NAME, 'lower-case letters, digits and dashes'),
  schedule: z.string().min(1).max(200),
  command: commandSchema,
  service: z.string().regex(SERVICE_NAME, 'not a service name').nullable(),
  timezone: z.string().min(1).max(64),
  timeout_s: timeout,
  concurrency: z.enum(JOB_CONCURRENCY),
  enabled: z.boolean(),
};

export const runLogLineSchema = named(
  'RunLogLine',
  z.object({
    seq: z.number().int(),
    at: ts,
    stream: z.string().describe('stdout, stderr, or system (what the control plane says about the run)'),
    line: z.string(),
  }),
  "A line of a run's output, as GET .../runs/{rid}/logs and the `run:<id>` topic carry it",
);

export const commandTimeout = timeout;
