import { z } from 'zod';
import { entryApp, entryRoute, entryTarget, revertEntry, revertReach } from '#lib/revert/revert.js';
import { route } from '#lib/http/route.js';
import { HttpError } from '#lib/http/errors.js';
import { auditParams } from './_lib.js';

export const POST = route(
  {
    summary:
      "Apply an audited change's recorded before-state, through the same operations as the original route",
    description:
      'Not diffable -> 422 not_diffable; already reverted, or the target changed since (without force) -> 409 conflict. ' +
      "The revert replays the original route's policy: an entry whose route needs a step-up (always or for some effects) needs one here too.",
    stepUpWhen: 'the reverted entry came from a route that needs a step-up',
    // What a revert may do is the original route's to say (its permission, on the entry's app): checked in the handler.
    permission: 'instance.read',
    app: (env, p) => entryApp(env, p.id!),
    params: auditParams,
    body: z.strictObject({ force: z.boolean().optional() }).optional(),
    responses: { 200: z.object({ audit_id: z.string() }) },
    audit: {
      action: 'audit.reverted',
      // The revert is itself a change of the same target: diffable and revertible like any other.
      state: (c) => entryTarget(c.env, Number(c.params.id)),
    },
  },
  async (_req, { env, params, body, reply, audit, requireStepUp, routeSpec, principal, permit }) => {
    const force = body?.force === true;
    // Permission and step-up belong to the effect: reverting an entry replays the original route's policy.
    const original = await entryRoute(env, params.id);
    const spec = original === null ? null : await routeSpec(original);
    const appId = await entryApp(env, params.id);
    // An entry of a route without a permission (a public one: none is revertible) is an instance administrator's.
    const permission = spec?.permission ?? 'instance.admin';
    permit(permission, appId);
    // Judged where the target is now and where the revert puts it, too: a domain moved to B since
    // needs B (404 when B is out of reach, as for any app), a redirect needs what a redirect needs.
    for (const app of await revertReach(env, params.id)) if (app !== appId) permit(permission, app);
    if (spec?.sessionOnly && principal?.kind !== 'session')
      throw new HttpError(
        'forbidden',
        'An API token cannot change how its owner signs in: use a signed-in session',
      );
    if (spec?.stepUp || spec?.stepUpWhen) requireStepUp();
    audit({
      target: String(params.id),
      revertOf: params.id,
      appId: appId ?? null,
      detail: { revert_of: String(params.id), force },
    });
    const r = await revertEntry(env, params.id, { force });
    audit({ target: r.targetId, stateId: r.targetId, answer: (id) => reply(200, { audit_id: id }) });
    return reply(200, { audit_id: '' });
  },
);
