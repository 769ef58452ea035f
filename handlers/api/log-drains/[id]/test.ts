import { z } from 'zod';
import { badRequest } from '#lib/http/errors.js';
import { route } from '#lib/http/route.js';
import { drainParams } from '../_lib.js';

/** Sends one test line now (one attempt, outside the drain's buffer) and answers how it went. */
export const POST = route(
  {
    permission: 'instance.admin',
    summary: 'Send one test line now (one attempt) and answer how it went',
    params: drainParams,
    responses: {
      200: z.object({ ok: z.boolean(), status: z.number().int().nullable(), error: z.string().optional() }),
    },
    audit: { action: 'log_drain.tested', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    const r = await env.drains.test(params.id);
    audit({ detail: { ok: r.ok, status: r.status } });
    if (r.refused)
      throw badRequest(`The drain URL is refused: ${r.error?.replace(/^refused: /, '')}`, [
        { field: 'url', message: r.error ?? 'refused' },
      ]);
    return reply(200, { ok: r.ok, status: r.status, ...(r.error ? { error: r.error } : {}) });
  },
);
