import { z } from 'zod';
import { countUsers } from '../../../lib/auth/users.js';
import { route } from '../../../lib/http/route.js';

export const GET = route({ summary: 'Whether first-boot setup is still open', auth: 'public', responses: { 200: z.object({ open: z.boolean() }) } }, async (_req, { env, reply }) =>
  reply(200, { open: (await countUsers(env.db)) === 0 }),
);
