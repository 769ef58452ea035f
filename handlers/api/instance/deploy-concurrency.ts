import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { MAX_CONCURRENCY, MIN_CONCURRENCY, readConcurrency } from '../../../lib/deploy/index.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

const body = z.object({ concurrency: z.number().int().min(MIN_CONCURRENCY).max(MAX_CONCURRENCY) }).strict();
export const schema: HandlerModule['schema'] = { body: { PUT: body } };

export const GET: Handler = async (_req, { env }) => json({ concurrency: await readConcurrency(env.db) });

/** How many apps may deploy at once (1..8); takes effect for the next queued deployment. */
export const PUT: Handler<unknown, z.infer<typeof body>> = async (_req, { env, body, audit }) => {
  const concurrency = await env.deployments.setConcurrency(body.concurrency);
  audit({ action: 'instance.deploy_concurrency', detail: { concurrency } });
  return json({ concurrency });
};
