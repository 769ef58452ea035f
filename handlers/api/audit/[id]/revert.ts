import { z } from 'zod';
import { entryTarget, revertEntry } from '../../../../lib/audit/revert.js';
import { route } from '../../../../lib/http/route.js';
import { auditParams } from './_params.js';

export const POST = route(
  {
    summary: "Apply an audited change's recorded before-state, through the same operations as the original route",
    description: 'Not diffable -> 422 not_diffable; already reverted, or the target changed since (without force) -> 409 conflict.',
    params: auditParams,
    body: z.strictObject({ force: z.boolean().optional() }).optional(),
    responses: { 200: z.object({ audit_id: z.string() }) },
    audit: {
      action: 'audit.reverted',
      // The revert is itself a change of the same target: diffable and revertible like any other.
      state: (c) => entryTarget(c.env, Number(c.params.id)),
    },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const force = body?.force === true;
    audit({ target: String(params.id), revertOf: params.id, detail: { revert_of: String(params.id), force } });
    const r = await revertEntry(env, params.id, { force });
    audit({ target: r.targetId, stateId: r.targetId, answer: (id) => reply(200, { audit_id: id }) });
    return reply(200, { audit_id: '' });
  },
);
