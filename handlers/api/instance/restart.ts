import { z } from 'zod';
import { unavailable } from '#lib/http/errors.js';
import { route } from '#lib/http/route.js';

/** 202 at once; the drain and the restart begin once this answer is on its way. */
export const POST = route(
  {
    permission: 'instance.admin',
    summary: 'Restart the control plane (202 at once; the drain begins once the answer is on its way)',
    stepUp: true,
    responses: { 202: z.object({ restarting: z.literal(true) }) },
    audit: { action: 'instance.restart' },
  },
  (_req, { env, reply }) => {
    const restart = env.requestRestart;
    if (!restart) throw unavailable('This host cannot restart the control plane (run it with `svc serve`)');
    setTimeout(restart, 100).unref();
    return reply(202, { restarting: true });
  },
);
