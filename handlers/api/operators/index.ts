import { listOperators } from '#lib/auth/operators.js';
import { items } from '#lib/api/common.js';
import { operatorSchema } from '#lib/api/auth.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    summary: 'Every operator with their role and apps',
    permission: 'operators.manage',
    responses: { 200: items(operatorSchema) },
  },
  async (_req, { env, reply }) => reply(200, { items: await listOperators(env.db) }),
);
