import { z } from 'zod';
import { HttpError } from '../../lib/http/errors.js';
import { ping } from '../../lib/db/index.js';
import { route } from '../../lib/http/route.js';

const OK = { status: 'ok', db: 'ok' } as const;

export const GET = route({ summary: 'Liveness: the database answers', auth: 'public', responses: { 200: z.object({ status: z.literal('ok'), db: z.literal('ok') }) } }, (_req, { env, reply }) => {
  try {
    ping(env.db);
  } catch {
    throw new HttpError('service_unavailable', 'Database is not answering');
  }
  return reply(200, OK);
});
