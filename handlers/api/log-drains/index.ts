import { z } from 'zod';
import { createDrain } from '#lib/drains/index.js';
import { listDrainRows } from '#lib/drains/store.js';
import { logDrainSchema } from '#lib/api/drains.js';
import { items } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';
import { createBody } from './_lib.js';

export const GET = route(
  {
    permission: 'instance.admin',
    summary: 'The log drains with their delivery state and counters',
    responses: { 200: items(logDrainSchema) },
  },
  async (_req, { env, reply }) =>
    reply(200, { items: (await listDrainRows(env.db)).map((d) => env.drains.view(d)) }),
);

export const POST = route(
  {
    permission: 'instance.admin',
    summary: 'Add a log drain',
    description:
      '`syslog` takes syslog+tls://host[:6514] (syslog://host[:514] only to SVC_NOTIFY_ALLOW addresses); `otlp_http` an OTLP/HTTP endpoint (JSON, /v1/logs when the URL has no path); `http_json` any https URL taking a JSON array of lines. The outbound guard applies.',
    body: createBody,
    responses: { 201: z.object({ drain: logDrainSchema }) },
    audit: { action: 'log_drain.created', state: { kind: 'log_drain' } },
  },
  async (_req, { env, body, reply, audit }) => {
    const row = await createDrain(
      { db: env.db, sealer: env.sealer, guard: env.drains.transport },
      body,
      env.now(),
    );
    audit({ target: row.id, detail: { kind: row.kind, name: row.name, url_hint: row.url_hint } });
    await env.drains.reload();
    return reply(201, { drain: env.drains.view(row) });
  },
);
