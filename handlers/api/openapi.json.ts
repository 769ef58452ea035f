import document from '../../api/openapi.json' with { type: 'json' };
import { raw, route } from '#lib/http/route.js';

// Generated at build time (scripts/gen-openapi.mjs); serialised once, on the first request.
const body = JSON.stringify(document);

export const GET = route(
  {
    permission: 'self.read',
    summary: 'This OpenAPI 3.1 document',
    responses: { 200: raw('application/json') },
  },
  (_req, { reply }) => reply(200, body),
);
