import { z } from 'zod';
import { appNameSchema } from '#lib/apps/schemas.js';
import { installAddon } from '#lib/addons/install.js';
import { route } from '#lib/http/route.js';
import { appSchema } from '#lib/api/apps.js';
import { deploymentSchema } from '#lib/api/deployments.js';

export const POST = route(
  {
    permission: 'app.admin',
    summary:
      'Install an add-on: an app from its template, deployed now (202); generated secrets are shown only here',
    params: z.object({ id: z.string().regex(/^[a-z0-9-]{1,40}$/, 'not an add-on id') }),
    body: z.strictObject({
      name: appNameSchema,
      params: z.record(z.string().max(100), z.string()).optional(),
    }),
    responses: {
      202: z.object({
        app: appSchema,
        deployment: deploymentSchema,
        generated_secrets: z.record(z.string(), z.string()),
      }),
    },
    audit: { action: 'addon.installed' },
  },
  async (_req, { env, params, body, reply, audit, principal }) => {
    const r = await installAddon(
      env,
      params.id,
      body.name,
      body.params ?? {},
      principal?.user.username ?? null,
    );
    // The generated values are secrets: the audit names the keys only.
    audit({
      target: r.app.id,
      detail: {
        addon: params.id,
        name: r.app.name,
        deployment: (r.deployment as { id: string }).id,
        generated: Object.keys(r.generated_secrets),
      },
    });
    return reply(202, r as never);
  },
);
