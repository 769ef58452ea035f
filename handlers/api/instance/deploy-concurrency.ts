import { z } from 'zod';
import { MAX_CONCURRENCY, MIN_CONCURRENCY, readConcurrency } from '#lib/deploy/store.js';
import { route } from '#lib/http/route.js';

const concurrency = z.object({ concurrency: z.number().int().min(MIN_CONCURRENCY).max(MAX_CONCURRENCY) });

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'How many apps may deploy at once',
    responses: { 200: concurrency },
  },
  async (_req, { env, reply }) => reply(200, { concurrency: await readConcurrency(env.db) }),
);

export const PUT = route(
  {
    permission: 'instance.admin',
    summary: 'Set how many apps may deploy at once (1..8); takes effect for the next queued deployment',
    body: concurrency.strict(),
    responses: { 200: concurrency },
    audit: {
      action: 'instance.deploy_concurrency',
      state: { kind: 'deploy_concurrency', id: () => 'instance' },
    },
  },
  async (_req, { env, body, reply, audit }) => {
    const n = await env.deployments.setConcurrency(body.concurrency);
    audit({ detail: { concurrency: n } });
    return reply(200, { concurrency: n });
  },
);
