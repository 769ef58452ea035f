import { z } from 'zod';
import { callHook } from '#lib/hooks/index.js';
import { route } from '#lib/http/route.js';

// Public: the URL's token is the credential. A CI job calls it after pushing an image.
export const POST = route(
  {
    summary: "An app's deploy hook: pull the app's images again and deploy (202 {deployment_id})",
    description:
      'Rate-limited per token (429 with Retry-After); an unknown token is 404. Waits behind a running deployment instead of answering 409. Audited as the system, naming the hook.',
    auth: 'public',
    params: z.object({ token: z.string().max(256) }),
    responses: { 202: z.object({ deployment_id: z.string() }) },
  },
  async (_req, { env, params, client, reply }) => reply(202, await callHook(env, params.token, client.ip)),
);
