import { raw, route } from '#lib/http/route.js';

// The runtime answers a plain 404 unless the bearer equals SVC_METRICS_TOKEN.
export const GET = route(
  {
    summary: 'Prometheus metrics (bearer SVC_METRICS_TOKEN; 404 without it)',
    auth: 'metrics',
    responses: { 200: raw('text/plain; version=0.0.4') },
  },
  async (_req, { env, reply }) => {
    const { text, contentType } = await env.metrics.render();
    return reply(200, text, { 'content-type': contentType });
  },
);
