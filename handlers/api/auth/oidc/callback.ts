import { z } from 'zod';
import { HttpError } from '#lib/http/errors.js';
import { finishOidc } from '#lib/auth/oidc.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    summary: 'Sign in with the OpenID Connect provider: where it sends the browser back',
    description:
      'Checks the state against the `svc_oidc` cookie, exchanges the code (PKCE), checks the ID token and its nonce, and maps the role claim (`SVC_OIDC_ROLE_CLAIM`) through `SVC_OIDC_ROLE_MAP`: ' +
      'a new person becomes an operator with that role, a known one gets the role the claims give now. Then the session cookies and `302` to `/` (or the `return_to` of the start). ' +
      'No role, a disabled operator, or any failed check: `403 forbidden`, and nothing is created. After `start?step_up=1`: the step-up of the session, and `302` back.',
    auth: 'public',
    rateLimit: true,
    query: z
      .object({ code: z.string().max(4096).optional(), state: z.string().max(1024).optional() })
      .catchall(z.string().max(4096)),
    responses: { 302: null },
    audit: { action: 'auth.login' },
  },
  async (request, { env, client, reply, audit }) => {
    let outcome;
    try {
      outcome = await finishOidc(env, request, client);
    } catch (e) {
      if (e instanceof HttpError && e.code === 'forbidden')
        audit({ action: 'auth.oidc_refused', via: 'oidc', detail: { reason: e.message } });
      throw e;
    }
    if (outcome.kind === 'refused') {
      audit({
        action: 'auth.oidc_refused',
        via: 'oidc',
        actor: outcome.actor,
        claimed: outcome.claimed,
        detail: { reason: outcome.message },
      });
      throw new HttpError('forbidden', outcome.message);
    }
    const detail: Record<string, unknown> = { role: outcome.role };
    if (outcome.previousRole !== null) detail.previous_role = outcome.previousRole;
    if (outcome.roleKept) detail.role_kept = 'the last enabled owner is not demoted by claims';
    if (outcome.kind === 'step_up') {
      audit({
        action: 'auth.step_up',
        actor: outcome.user,
        via: 'oidc',
        detail: { ...detail, verified_until: outcome.verifiedUntil },
      });
    } else {
      if (outcome.created) detail.created = true;
      audit({ action: 'auth.login', actor: outcome.user, via: 'oidc', detail });
    }
    return reply(302, null, outcome.headers);
  },
);
