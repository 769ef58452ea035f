import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { envKeySchema, sleepAfterSchema } from '#lib/apps/schemas.js';
import { getSettings, putSettings, sleepingChildren } from '#lib/previews/store.js';
import { DEFAULT_PREVIEW_SLEEP_MINUTES, PREVIEW_DATABASES } from '#lib/previews/model.js';
import { previewSettingsSchema } from '#lib/api/previews.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's preview settings",
    params: appParams,
    responses: { 200: previewSettingsSchema },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, await getSettings(env.db, params.id));
  },
);

export const PUT = route(
  {
    permission: 'app.admin',
    summary: "Set an app's preview settings",
    description:
      "A preview receives none of the app's variables except the keys in `inherit_env`, plus the preview-only ones (PUT .../previews/env). `sleep_after_minutes` (default 30, null: never) applies to every preview of the app, existing ones too.",
    params: appParams,
    body: z.strictObject({
      enabled: z.boolean(),
      from_forks: z.boolean().default(false),
      ttl_hours: z
        .number()
        .int()
        .min(1)
        .max(24 * 365)
        .default(72),
      max: z.number().int().min(1).max(100).default(5),
      inherit_env: z.array(envKeySchema).max(500).default([]),
      database: z.enum(PREVIEW_DATABASES).default('none'),
      sleep_after_minutes: sleepAfterSchema.nullable().default(DEFAULT_PREVIEW_SLEEP_MINUTES),
    }),
    responses: { 200: previewSettingsSchema },
    audit: { action: 'app.preview_settings_changed', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit }) => {
    await getApp(env.db, params.id);
    const settings = await putSettings(env.db, params.id, body, env.now());
    // Turned off while previews sleep: they wake now, as an app does (nothing would put them back to sleep).
    if (settings.sleep_after_minutes === null) {
      const children = await sleepingChildren(env.db, params.id);
      await Promise.all(children.map((id) => env.sleeper.wake(id).catch(() => {})));
    }
    audit({ detail: { ...settings } });
    return reply(200, settings);
  },
);
