import { testRegistry } from '#lib/registries/index.js';
import { registryParams } from '#lib/registries/schemas.js';
import { registryTestSchema } from '#lib/api/registries.js';
import { route } from '#lib/http/route.js';

export const POST = route(
  {
    permission: 'instance.admin',
    summary: "Log in to the registry's /v2/ with the stored credentials (200 {ok, error?})",
    params: registryParams,
    responses: { 200: registryTestSchema },
    audit: { action: 'registry.tested', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    const result = await testRegistry(env, params.id);
    audit({ detail: { ok: result.ok } });
    return reply(200, result);
  },
);
