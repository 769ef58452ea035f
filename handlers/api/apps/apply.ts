import { z } from 'zod';
import { applyAppFile } from '#lib/appspec/apply.js';
import { appFileSchema } from '#lib/appspec/spec.js';
import { appSchema, configChangeSchema } from '#lib/api/apps.js';
import { getAppByName } from '#lib/apps/store.js';
import { currentStatuses } from '#lib/apps/status.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'app.admin',
    appInBody: true,
    summary:
      'Create or update the app a file names; ?dry_run=1 answers the changes and changes nothing. Nothing the file does not name is removed unless it says prune: true',
    query: z.object({ dry_run: z.enum(['0', '1', 'true', 'false']).optional() }),
    body: appFileSchema,
    responses: {
      200: z.object({
        dry_run: z.boolean(),
        created: z.boolean().describe('The app did not exist and was created'),
        app: appSchema.nullable().describe('The app after the apply (a dry run: as it is, null when new)'),
        changes: z.array(configChangeSchema),
        missing_secrets: z
          .array(z.string())
          .describe(
            'Secrets the file declares that the app does not have: its next deploy fails until they are set',
          ),
      }),
    },
    audit: { action: 'app.applied' },
  },
  async (_req, { env, body, query, reply, audit, permit }) => {
    const existing = await getAppByName(env.db, body.name);
    permit('app.admin', existing?.id ?? null);
    const dryRun = query.dry_run === '1' || query.dry_run === 'true';
    const r = await applyAppFile(env, body, dryRun);
    // One entry for the whole apply; a dry run changed nothing and leaves none.
    if (dryRun) audit({ skip: true });
    else if (r.app)
      audit({
        target: r.app.id,
        appId: r.app.id,
        detail: { name: body.name, created: r.created, changes: r.changes.map((c) => c.path) },
      });
    const [app] = r.app ? await currentStatuses(env, [r.app]) : [null];
    return reply(200, {
      dry_run: dryRun,
      created: r.created,
      app: app ?? null,
      changes: r.changes,
      missing_secrets: r.missing_secrets,
    });
  },
);
