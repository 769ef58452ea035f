import { json } from '../../lib/http/respond.js';
import { HttpError } from '../../lib/http/errors.js';
import { readBodyBytes } from '../../lib/http/body.js';
import { MAX_PAYLOAD_BYTES } from '../../lib/webhooks/payload.js';
import { receiveDelivery } from '../../lib/webhooks/receive.js';
import type { Handler, HandlerModule } from '../../lib/http/handler.js';

// Public: a delivery authenticates itself by its signature (or GitLab's token).
export const auth: HandlerModule['auth'] = 'public';

export const POST: Handler<{ appID: string }> = async (request, { env, params, client }) => {
  // Compressed bodies could expand far past the limit after the check: refused outright.
  const encoding = request.headers.get('content-encoding');
  if (encoding && encoding.toLowerCase() !== 'identity') throw new HttpError('bad_request', 'Compressed webhook bodies are not accepted');
  // Over 1 MiB is refused before anything hashes the whole body.
  const body = await readBodyBytes(request, MAX_PAYLOAD_BYTES);
  const outcome = await receiveDelivery(env, params.appID, request.headers, body, client.ip);
  return json(outcome.body, outcome.status);
};
