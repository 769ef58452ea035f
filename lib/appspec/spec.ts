// An app as a file: the repository file's keys (lib/appspec/file.ts) plus its name and source.
// Export writes it (secrets as `${KEY}` placeholders, defaults left out); apply reads it back.
import { z } from 'zod';
import type { Services } from '../http/handler.js';
import { appNameSchema, sourceSchema } from '../apps/schemas.js';
import type { App, AppSource } from '../apps/model.js';
import { serviceSettings } from '../apps/store.js';
import { listEnv } from '../apps/env.js';
import { clusterSettings } from '../cluster/settings.js';
import { svcFileShape, type SvcFile } from './file.js';
import { TRIGGER_EVENTS, validatePattern } from '../webhooks/triggers.js';
import { MAX_TRIGGERS, listTriggers } from '../webhooks/store.js';

export const appFileSchema = z
  .strictObject({
    ...svcFileShape,
    name: appNameSchema,
    source: sourceSchema,
    triggers: z
      .array(
        z.strictObject({
          event: z.enum(TRIGGER_EVENTS),
          pattern: z
            .string()
            .min(1)
            .max(255)
            .superRefine((p, ctx) => {
              const v = validatePattern(p);
              if (!v.ok) ctx.addIssue({ code: 'custom', message: v.reason });
            }),
          enabled: z.boolean().optional().describe('Default true'),
        }),
      )
      .max(MAX_TRIGGERS)
      .optional()
      .describe('Which pushes, tags and pull requests deploy the app (not a key of the repository file)'),
    prune: z
      .boolean()
      .optional()
      .describe('Apply only: also remove the settings and variables this file does not name'),
  })
  .describe("An app as a file: svc.yaml's keys with the app's name and source");
export type AppFile = z.infer<typeof appFileSchema>;
export type AppFileInput = z.input<typeof appFileSchema>;

/** `${KEY}`: a secret's placeholder in an exported file (the value never leaves). */
export const placeholder = (key: string) => '${' + key + '}';

/** The source as the file writes it: the build is its own key, the default branch is left out. */
function fileSource(source: AppSource): { source: AppFile['source']; build?: SvcFile['build'] } {
  if (source.type !== 'git') return { source };
  const { build, branch, ...rest } = source;
  return {
    source: { ...rest, ...(branch !== 'main' ? { branch } : {}) } as AppFile['source'],
    ...(build ? { build } : {}),
  };
}

async function fileServices(deps: Pick<Services, 'db'>, appId: string): Promise<SvcFile['services']> {
  const out: NonNullable<SvcFile['services']> = {};
  const cluster = await clusterSettings(deps.db, appId);
  for (const [name, s] of await serviceSettings(deps.db, appId)) {
    const replicas = cluster.get(name)?.replicas ?? null;
    const svc = {
      ...(s.port !== null ? { port: s.port } : {}),
      ...(s.health_path !== null ? { health_path: s.health_path } : {}),
      ...(replicas !== null ? { replicas } : {}),
    };
    if (Object.keys(svc).length) out[name] = svc;
  }
  return Object.keys(out).length ? out : undefined;
}

/** The app as a file. Secret values never leave: a secret is written as its `${KEY}` placeholder. */
export async function exportAppFile(deps: Pick<Services, 'db' | 'sealer'>, app: App): Promise<AppFile> {
  const vars = deps.sealer.available ? await listEnv(deps.db, deps.sealer, app.id) : [];
  const env = Object.fromEntries(vars.map((v) => [v.key, v.secret ? placeholder(v.key) : (v.value ?? '')]));
  const services = await fileServices(deps, app.id);
  const { source, build } = fileSource(app.source);
  const triggers = (await listTriggers(deps.db, app.id)).map((t) => ({
    event: t.event,
    pattern: t.pattern,
    ...(t.enabled ? {} : { enabled: false }),
  }));
  return {
    name: app.name,
    source,
    ...(build ? { build } : {}),
    ...(services ? { services } : {}),
    ...(app.release_command?.length ? { release_command: app.release_command } : {}),
    ...(app.sleep_after_minutes !== null ? { sleep_after_minutes: app.sleep_after_minutes } : {}),
    ...(vars.length ? { env } : {}),
    ...(triggers.length ? { triggers } : {}),
  };
}

/** The file as YAML, with a line naming its schema for editors. */
export async function appFileYaml(file: AppFile): Promise<string> {
  const { stringify } = await import('yaml');
  return `# yaml-language-server: $schema=/api/schemas/svc.json\n${stringify(file, { lineWidth: 0 })}`;
}
