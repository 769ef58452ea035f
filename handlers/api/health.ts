import { HttpError } from '#lib/http/errors.js';
import { ping } from '#lib/db/index.js';
import { lazySchema, route } from '#lib/http/route.js';

const OK = { status: 'ok', db: 'ok' } as const;

// The schema is loaded only to document the route: supervisors poll this route from the first
// second, and an idle server that has answered nothing else need not hold zod (lib/http/route.ts).
const healthBody = lazySchema(async () => {
  const { z } = await import('zod');
  return z.object({ status: z.literal('ok'), db: z.literal('ok') });
});

export const GET = route(
  { summary: 'Liveness: the database answers', auth: 'public', responses: { 200: healthBody } },
  (_req, { env, reply }) => {
    try {
      ping(env.db);
    } catch {
      throw new HttpError('service_unavailable', 'Database is not answering');
    }
    return reply(200, OK);
  },
);
