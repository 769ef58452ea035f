import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { appFileYaml, exportAppFile } from '#lib/appspec/spec.js';
import { appFileBody } from '#lib/api/apps.js';
import { route, type TypedResponse } from '#lib/http/route.js';
import { appParams } from '../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary:
      'The app as a file (svc.yaml with name and source): secrets as ${KEY} placeholders, defaults left out; ?format=yaml answers it as YAML (application/yaml)',
    params: appParams,
    query: z.object({ format: z.enum(['json', 'yaml']).default('json') }),
    responses: { 200: appFileBody },
  },
  async (_req, { env, params, query, reply }) => {
    const file = await exportAppFile(env, await getApp(env.db, params.id));
    if (query.format === 'json') return reply(200, file);
    // The same document as YAML: the one answer this route's schema describes, in another syntax.
    return new Response(await appFileYaml(file), {
      status: 200,
      headers: { 'content-type': 'application/yaml; charset=utf-8' },
    }) as TypedResponse<200>;
  },
);
