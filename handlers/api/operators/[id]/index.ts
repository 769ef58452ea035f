import { z } from 'zod';
import { actingOperator, removeOperator, updateOperator } from '#lib/auth/operators.js';
import { operatorSchema } from '#lib/api/auth.js';
import { route } from '#lib/http/route.js';
import { operatorParams, patchBody } from '../_lib.js';

// Widening access is as sensitive as minting a token; narrowing and disabling end access at once.
export const PATCH = route(
  {
    summary:
      "Change an operator's role, apps or disabled flag (only an owner touches owners; 409 for the last enabled owner)",
    description:
      'Disabling ends their sessions and revokes their tokens at once; any change re-checks their open connections. `app_ids` only for deployers and viewers, each an existing app.',
    permission: 'operators.manage',
    stepUp: true,
    params: operatorParams,
    body: patchBody,
    responses: { 200: z.object({ operator: operatorSchema }) },
    audit: { action: 'operator.updated', target: (c) => c.params.id },
  },
  async (_req, { env, principal, params, body, reply, audit }) => {
    const actor = await actingOperator(env.db, principal!.user.id);
    const { before, after } = await updateOperator(env.db, actor, params.id, body, env.now());
    const changed = (['role', 'app_ids', 'disabled'] as const).filter(
      (k) => JSON.stringify(before[k]) !== JSON.stringify(after[k]),
    );
    audit({
      action: after.disabled && !before.disabled ? 'operator.disabled' : 'operator.updated',
      detail: { username: after.username, before: pick(before, changed), after: pick(after, changed) },
    });
    return reply(200, { operator: after });
  },
);

export const DELETE = route(
  {
    summary: 'Delete an operator: their sessions and tokens end at once (409 for the last enabled owner)',
    permission: 'operators.manage',
    stepUp: true,
    params: operatorParams,
    responses: { 204: null },
    audit: { action: 'operator.deleted', target: (c) => c.params.id },
  },
  async (_req, { env, principal, params, reply, audit }) => {
    const actor = await actingOperator(env.db, principal!.user.id);
    const removed = await removeOperator(env.db, actor, params.id);
    audit({ detail: { username: removed.username, role: removed.role } });
    return reply(204);
  },
);

function pick<T extends object, K extends keyof T>(o: T, keys: readonly K[]): Partial<T> {
  return Object.fromEntries(keys.map((k) => [k, o[k]])) as unknown as Partial<T>;
}
