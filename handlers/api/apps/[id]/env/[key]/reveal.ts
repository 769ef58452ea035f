import { z } from 'zod';
import { notFound } from '#lib/http/errors.js';
import { getApp } from '#lib/apps/store.js';
import { revealEnv } from '#lib/apps/env.js';
import { route } from '#lib/http/route.js';
import { envKeyParams } from '../../../_lib.js';

// A read, but an audited one: who saw which secret, and when. A stolen session or token must not
// be enough to read every secret: the operator proves it is them again (step-up).
export const GET = route(
  {
    permission: 'app.env',
    summary: 'The value of one variable, secret or not (audited)',
    stepUp: true,
    params: envKeyParams,
    responses: { 200: z.object({ key: z.string(), value: z.string() }) },
    audit: { action: 'app.env_revealed', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    audit({ detail: { key: params.key } });
    await getApp(env.db, params.id);
    const value = await revealEnv(env.db, env.sealer, params.id, params.key);
    if (value === null) throw notFound(`No variable "${params.key}"`);
    return reply(200, { key: params.key, value });
  },
);
