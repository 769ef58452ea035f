import { deleteDrain, updateDrain } from '#lib/drains/index.js';
import { getDrainRow } from '#lib/drains/store.js';
import { logDrainSchema } from '#lib/api/drains.js';
import { route } from '#lib/http/route.js';
import { drainParams, patchBody } from '../_lib.js';

export const GET = route(
  {
    permission: 'instance.admin',
    summary: 'One log drain with its delivery state and counters',
    params: drainParams,
    responses: { 200: logDrainSchema },
  },
  async (_req, { env, params, reply }) => reply(200, env.drains.view(await getDrainRow(env.db, params.id))),
);

export const PATCH = route(
  {
    permission: 'instance.admin',
    summary: 'Change a log drain',
    params: drainParams,
    body: patchBody,
    responses: { 200: logDrainSchema },
    audit: {
      action: 'log_drain.updated',
      target: (c) => c.params.id,
      state: { kind: 'log_drain', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const row = await updateDrain(
      { db: env.db, sealer: env.sealer, guard: env.drains.transport },
      params.id,
      body,
      env.now(),
    );
    audit({ target: row.id, detail: { fields: Object.keys(body), url_hint: row.url_hint } });
    await env.drains.reload();
    return reply(200, env.drains.view(row));
  },
);

export const DELETE = route(
  {
    permission: 'instance.admin',
    summary: 'Delete a log drain',
    params: drainParams,
    responses: { 204: null },
    audit: {
      action: 'log_drain.deleted',
      target: (c) => c.params.id,
      state: { kind: 'log_drain', id: (c) => c.params.id },
    },
  },
  async (_req, { env, params, reply }) => {
    await deleteDrain(env.db, params.id);
    await env.drains.reload();
    return reply(204);
  },
);
