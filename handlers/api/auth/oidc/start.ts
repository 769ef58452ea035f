import { z } from 'zod';
import { RETURN_TO, beginOidc } from '#lib/auth/oidc.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    summary: 'Sign in with the OpenID Connect provider: a redirect to it',
    description:
      'Answers `302` to the provider (authorization code with PKCE, `state` and `nonce`), with a short-lived HttpOnly `svc_oidc` cookie that binds the flow to this browser. ' +
      '`step_up=1` (a signed-in session of an operator of the provider): asks the provider for a fresh sign-in (`max_age=0`); the callback then marks the step-up of this session. ' +
      '`return_to`: a path of this site to land on afterwards (default `/`). `404` when no provider is configured.',
    auth: 'public',
    rateLimit: true,
    query: z.strictObject({
      step_up: z.enum(['0', '1']).optional(),
      return_to: z.string().regex(RETURN_TO, 'a path of this site, like /apps').optional(),
    }),
    responses: { 302: null },
  },
  async (request, { env, query, client, reply }) => {
    const { headers } = await beginOidc(env, request, client, {
      stepUp: query.step_up === '1',
      returnTo: query.return_to ?? '/',
    });
    return reply(302, null, headers);
  },
);
