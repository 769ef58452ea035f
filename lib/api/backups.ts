// Wire shapes of backups: app backup configurations and runs, restores, the instance backup.
import { z } from 'zod';
import { named, ts } from './common.js';

const backupSourceSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('database'), database_id: z.string() }),
  z.object({
    type: z.literal('volume'),
    volume: z.string().describe("The volume's name as the app's compose file writes it"),
  }),
]);

const backupDestinationSchema = z.discriminatedUnion('type', [
  z.object({ type: z.literal('local') }),
  z.object({
    type: z.literal('s3'),
    endpoint: z.string(),
    region: z.string(),
    bucket: z.string(),
    prefix: z.string(),
    access_key_id: z.string(),
    path_style: z.boolean(),
    secret_set: z.boolean().optional().describe('The secret key is sealed and never returned'),
  }),
]);

export const backupRunSchema = named(
  'BackupRun',
  z.object({
    id: z.string(),
    backup_id: z.string(),
    status: z.string().describe('running | succeeded | failed | interrupted'),
    trigger: z.string(),
    started_at: ts,
    finished_at: ts.nullable(),
    size_bytes: z.number().nullable(),
    sha256: z.string().nullable().describe("Of the stored (encrypted) artifact's bytes"),
    error: z.string().nullable(),
    verified_at: ts.nullable(),
    verify_error: z.string().nullable(),
    artifact_removed: z.boolean().describe('Retention removed the artifact: download and restore answer 410'),
  }),
  'One run of a backup',
);

export const backupConfigSchema = named(
  'BackupConfig',
  z.object({
    id: z.string(),
    app_id: z.string(),
    source: backupSourceSchema,
    schedule: z.string().describe('5-field cron expression, UTC'),
    keep_last: z.number().int(),
    destination: backupDestinationSchema,
    enabled: z.boolean(),
    verify_after_run: z.boolean(),
    last_run: backupRunSchema.nullable(),
    created_at: ts,
    updated_at: ts,
  }),
  'A backup configuration of an app: what, when, how many kept, where, and its last run',
);

export const instanceBackupRunSchema = named(
  'InstanceBackupRun',
  z.object({
    id: z.string(),
    status: z.string().describe('running | succeeded | failed | interrupted'),
    trigger: z.string(),
    started_at: ts,
    finished_at: ts.nullable(),
    size_bytes: z.number().nullable(),
    sha256: z.string().nullable().describe("Of the stored (encrypted) artifact's bytes"),
    error: z.string().nullable(),
    notes: z
      .string()
      .nullable()
      .describe('What the run could not include (Caddy storage not readable here, say)'),
    verified_at: ts.nullable(),
    verify_error: z.string().nullable(),
    artifact_removed: z.boolean(),
  }),
  'One run of the instance backup (control database, Caddy certificates; never the master key)',
);

export const instanceBackupSchema = named(
  'InstanceBackup',
  z.object({
    schedule: z.string().describe('5-field cron expression, UTC'),
    keep_last: z.number().int(),
    destination: backupDestinationSchema,
    enabled: z.boolean(),
    last_run: instanceBackupRunSchema.nullable(),
    updated_at: ts,
  }),
  'The instance backup configuration',
);

export const restoreSchema = named(
  'Restore',
  z.object({
    id: z.string(),
    run_id: z.string(),
    status: z.string().describe('running | succeeded | failed'),
    error: z.string().nullable(),
    started_at: ts,
    finished_at: ts.nullable(),
  }),
  'A restore of a backup run into its source',
);

export const backupsOverviewSchema = named(
  'BackupsOverview',
  z.object({
    configs: z.array(backupConfigSchema),
    failed_last_7d: z.array(z.object({ ...backupRunSchema.shape, app_id: z.string() })),
    uncovered: z.array(
      z.object({
        app_id: z.string(),
        service: z.string(),
        volume: z.string(),
        database_id: z.string().optional(),
      }),
    ),
  }),
  'Backup configurations, failures of the last 7 days and what no configuration covers',
);
