import { z } from 'zod';
import { badRequest } from '#lib/http/errors.js';
import { route } from '#lib/http/route.js';
import { channelParams } from '../_lib.js';

/** Sends one test message now (one attempt) and answers how it went. */
export const POST = route(
  {
    permission: 'instance.admin',
    summary: 'Send one test message now (one attempt) and answer how it went',
    params: channelParams,
    responses: {
      200: z.object({ ok: z.boolean(), status: z.number().int().nullable(), error: z.string().optional() }),
    },
    audit: { action: 'notification.channel_tested', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    const r = await env.notifier.test(params.id);
    audit({ detail: { ok: r.ok, status: r.status } });
    if (r.refused)
      throw badRequest(`The notification URL is refused: ${r.error?.replace(/^refused: /, '')}`, [
        { field: 'url', message: r.error ?? 'refused' },
      ]);
    return reply(200, { ok: r.ok, status: r.status, ...(r.error ? { error: r.error } : {}) });
  },
);
