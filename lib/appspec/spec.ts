// The portable description of an app: enough to recreate it elsewhere, never a secret value.
import { z } from 'zod';
import type { Services as Env } from '../http/handler.js';
import {
  appNameSchema,
  envKeySchema,
  healthPathSchema,
  servicePortSchema,
  sourceSchema,
} from '../apps/schemas.js';
import type { App } from '../apps/model.js';
import { refuseNameTakingDomains } from '../proxy/domains.js';
import { insertApp, patchServiceSettings, serviceSettings, deleteAppRows } from '../apps/store.js';
import { listEnv, replaceEnv } from '../apps/env.js';
import { SERVICE_NAME } from '../compose/index.js';
import { requireSealer } from '../crypto/seal.js';
import { addTrigger, listTriggers } from '../webhooks/store.js';

export const SPEC_VERSION = 1;

export const specSchema = z.strictObject({
  version: z.literal(SPEC_VERSION),
  name: appNameSchema,
  source: sourceSchema,
  services: z
    // The same rules as PATCH /services/{name}, checked with the rest of the body (400, not later).
    .array(
      z.strictObject({
        name: z.string().regex(SERVICE_NAME),
        port: servicePortSchema.nullable(),
        health_path: healthPathSchema.nullable(),
      }),
    )
    .max(100)
    .default([]),
  env: z
    .array(z.strictObject({ key: envKeySchema, secret: z.boolean(), value: z.string().nullable() }))
    .max(500)
    .default([]),
  triggers: z
    .array(
      z.strictObject({
        event: z.enum(['push', 'tag', 'pull_request']),
        pattern: z.string().min(1).max(255),
        enabled: z.boolean().default(true),
      }),
    )
    .max(100)
    .default([]),
  domains: z.array(z.unknown()).max(0, 'domains are not supported yet').default([]),
});
export type AppSpec = z.infer<typeof specSchema>;

export async function exportSpec(env: Env, app: App): Promise<AppSpec> {
  const settings = await serviceSettings(env.db, app.id);
  // Secret values never leave: their keys do (value null), so the importer knows what to set.
  const vars = env.sealer.available ? await listEnv(env.db, env.sealer, app.id) : [];
  return {
    version: SPEC_VERSION,
    name: app.name,
    source: app.source,
    services: [...settings].map(([name, s]) => ({ name, port: s.port, health_path: s.health_path })),
    env: vars.map((v) => ({ key: v.key, secret: v.secret, value: v.secret ? null : v.value })),
    triggers: (await listTriggers(env.db, app.id)).map((t) => ({
      event: t.event,
      pattern: t.pattern,
      enabled: t.enabled,
    })),
    domains: [],
  };
}

/**
 * Creates the app and its settings. Secret keys arrive without values; they are reported back as
 * `missing_secrets` to be set. Any failure removes the half-made app, so nothing is left behind.
 */
export async function importSpec(env: Env, spec: AppSpec): Promise<{ app: App; missing_secrets: string[] }> {
  const withValues = spec.env.filter((e) => e.value !== null);
  if (withValues.length) requireSealer(env.sealer);
  await refuseNameTakingDomains(env, spec.name);
  const app = await insertApp(env.db, spec.name, spec.source, env.now());
  try {
    for (const s of spec.services)
      await patchServiceSettings(env.db, app.id, s.name, { port: s.port, health_path: s.health_path });
    if (withValues.length)
      await replaceEnv(
        env.db,
        env.sealer,
        app.id,
        withValues.map((e) => ({ key: e.key, value: e.value, secret: e.secret })),
      );
    for (const t of spec.triggers) await addTrigger(env.db, app.id, t, env.now());
  } catch (e) {
    await deleteAppRows(env.db, app.id);
    throw e;
  }
  return { app, missing_secrets: spec.env.filter((e) => e.value === null).map((e) => e.key) };
}
