import { z } from 'zod';
import { userSchema } from '../../../lib/api/schemas.js';
import { route } from '../../../lib/http/route.js';

export const GET = route(
  { summary: 'Who is calling, and how they authenticated', responses: { 200: z.object({ user: userSchema, via: z.enum(['session', 'token']) }) } },
  (_req, { principal, reply }) => reply(200, { user: principal!.user, via: principal!.kind }),
);
