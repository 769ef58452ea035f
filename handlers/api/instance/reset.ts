import { z } from 'zod';
import { resetInstance } from '#lib/instance/reset.js';
import { route } from '#lib/http/route.js';
import { resetResultSchema } from '#lib/api/instance.js';

/** Removes every app with everything it owns; operators, tokens, audit and settings stay. */
export const POST = route(
  {
    permission: 'instance.owner',
    summary: 'Remove every app with everything it owns (operators, tokens, audit and settings stay)',
    stepUp: true,
    body: z.strictObject({ confirm: z.literal('RESET', { error: 'confirm must be exactly "RESET"' }) }),
    responses: { 200: resetResultSchema },
    audit: { action: 'instance.reset' },
  },
  async (_req, { env, reply, audit }) => {
    const r = await resetInstance(env);
    audit({ detail: { removed: r.removed.map((a) => a.name), failed: r.failed.map((a) => a.name) } });
    return reply(200, r);
  },
);
