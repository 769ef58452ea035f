import { raw, route } from '#lib/http/route.js';
import { svcFileJsonSchema } from '#lib/appspec/file.js';

// Generated from the zod schema the deploy checks the file with (lib/appspec/file.ts); built once.
let body: string | undefined;

export const GET = route(
  {
    summary: "The JSON Schema of the repository's svc.yaml (for editors and CI checks)",
    auth: 'public',
    responses: { 200: raw('application/schema+json') },
  },
  (_req, { reply }) => reply(200, (body ??= JSON.stringify(svcFileJsonSchema(), null, 2))),
);
