import { diffEntry, entryApp } from '#lib/revert/revert.js';
import { auditDiffSchema } from '#lib/api/audit.js';
import { route } from '#lib/http/route.js';
import { auditParams } from './_lib.js';

export const GET = route(
  {
    summary:
      'What an audited change did to its target (secrets masked), and whether the target changed since',
    description:
      'Entries without recorded state (logins, deployments, failed requests) answer 422 not_diffable.',
    permission: 'instance.read',
    // An entry about an app outside the caller's list is as absent as the app.
    app: (env, p) => entryApp(env, p.id!),
    params: auditParams,
    responses: { 200: auditDiffSchema },
  },
  async (_req, { env, params, reply, principal }) =>
    reply(200, await diffEntry(env, params.id, principal?.appIds ?? null)),
);
