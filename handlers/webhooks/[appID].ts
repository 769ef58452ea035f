import { z } from 'zod';
import { ClientAbortError, HttpError } from '#lib/http/errors.js';
import { readBodyBytes } from '#lib/http/body.js';
import { MAX_PAYLOAD_BYTES } from '#lib/webhooks/payload.js';
import { logRefusedDelivery, receiveDelivery } from '#lib/webhooks/receive.js';
import { deploymentBody } from '#lib/api/deployments.js';
import { previewBody } from '#lib/api/previews.js';
import { previewDeliveries } from '#lib/previews/webhook.js';
import { route } from '#lib/http/route.js';

// Public: a delivery authenticates itself by its signature (or GitLab's token).
export const POST = route(
  {
    summary: "A forge's push, tag or pull/merge request delivery (signed with the app's webhook secret)",
    description:
      'A push or tag deploys (202 {deployment}); a pull/merge request event deploys or removes its preview (202 {preview}).',
    auth: 'public',
    params: z.object({ appID: z.string().max(256) }),
    responses: {
      202: z.union([deploymentBody, previewBody]),
      200: z.union([
        z.object({ ignored: z.string() }),
        z.object({ duplicate: z.literal(true), reason: z.string().optional() }),
        z.object({ ok: z.literal(true), event: z.literal('ping') }),
      ]),
    },
  },
  async (request, { env, params, client, reply }) => {
    let body: Uint8Array;
    try {
      // Compressed bodies could expand far past the limit after the check: refused outright.
      const encoding = request.headers.get('content-encoding');
      if (encoding && encoding.toLowerCase() !== 'identity')
        throw new HttpError('bad_request', 'Compressed webhook bodies are not accepted');
      // Over 1 MiB is refused before anything hashes the whole body.
      body = await readBodyBytes(request, MAX_PAYLOAD_BYTES);
    } catch (e) {
      if (e instanceof HttpError && !(e instanceof ClientAbortError))
        await logRefusedDelivery(env, params.appID, request.headers, e.message);
      throw e;
    }
    const outcome = await receiveDelivery(env, params.appID, request.headers, body, client.ip, {
      pullRequest: previewDeliveries(env),
    });
    return outcome.status === 202 ? reply(202, outcome.body) : reply(200, outcome.body);
  },
);
