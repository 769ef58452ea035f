import { text } from '../lib/http/respond.js';
import type { Handler, HandlerModule } from '../lib/http/handler.js';

// The runtime answers a plain 404 unless the bearer equals SVC_METRICS_TOKEN.
export const auth: HandlerModule['auth'] = 'metrics';

export const GET: Handler = async (_req, { env }) => {
  const { text: body, contentType } = await env.metrics.render();
  return text(body, 200, contentType);
};
