// Wire shapes of previews: one environment per pull request, and their settings.
import { z } from 'zod';
import { named, ts } from './common.js';

export const previewSchema = named(
  'Preview',
  z.object({
    id: z.string(),
    app_id: z.string(),
    number: z.number().int(),
    title: z.string().nullable(),
    branch: z.string(),
    commit: z.string().nullable(),
    host: z.string().nullable().describe('pr-<number>-<app>.<base domain>; null without a base domain'),
    url: z.string().nullable(),
    status: z
      .string()
      .describe("As an app's: created, deploying, running, degraded, stopped, failed, sleeping..."),
    deployment_id: z.string().nullable(),
    sleeping: z.boolean(),
    created_at: ts,
    updated_at: ts,
    expires_at: ts,
  }),
);
export const previewBody = named('PreviewBody', z.object({ preview: previewSchema }));

export const PREVIEW_DATABASES = ['none', 'empty', 'latest_backup'] as const;

export const previewSettingsSchema = named(
  'PreviewSettings',
  z.object({
    enabled: z.boolean(),
    from_forks: z.boolean(),
    ttl_hours: z.number().int(),
    max: z.number().int(),
    inherit_env: z.array(z.string()),
    database: z.enum(PREVIEW_DATABASES),
    sleep_after_minutes: z
      .number()
      .int()
      .nullable()
      .describe('Idle minutes after which a preview sleeps (default 30); null: never'),
  }),
);
