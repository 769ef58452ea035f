import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { listDeployments } from '#lib/deploy/store.js';
import { ID_PATTERN } from '#lib/crypto/random.js';
import { page } from '#lib/api/common.js';
import { deploymentBody, deploymentSchema } from '#lib/api/deployments.js';
import { route } from '#lib/http/route.js';
import { COMMIT_HASH } from '#lib/git/validate.js';
import { appParams } from '../../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: "An app's deployments, newest first",
    params: appParams,
    query: z.object({
      cursor: z.string().regex(ID_PATTERN, 'not a cursor').optional(),
      limit: z.coerce.number().int().min(1).max(100).default(20),
    }),
    responses: { 200: page(deploymentSchema) },
  },
  async (_req, { env, params, query, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, await listDeployments(env.db, params.id, query));
  },
);

export const POST = route(
  {
    permission: 'app.deploy',
    summary:
      "Deploy an app now (202: queued), its ref's head or one commit of its history, pulling its images again with pull: true; 409 while a manual deployment is active",
    params: appParams,
    // The ref is checked again by the queue (same rules as every ref: no shell characters, no leading "-").
    body: z
      .object({
        ref: z.string().max(255).optional(),
        commit: z
          .string()
          .regex(COMMIT_HASH, 'a commit is 4 to 40 hexadecimal digits of its hash')
          .optional()
          .describe(
            "Git apps: deploy exactly this commit (full or abbreviated hash), which must be on the ref's history",
          ),
        pull: z
          .boolean()
          .optional()
          .describe('Pull every image again before deploying ("pull latest and redeploy"); default false'),
      })
      .strict(),
    responses: { 202: deploymentBody },
    audit: { action: 'deployment.created', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit, principal }) => {
    const { deployment } = await env.deployments.enqueue(await getApp(env.db, params.id), {
      trigger: 'manual',
      ref: body.ref ?? null,
      pin: body.commit ?? null,
      pull: body.pull ?? false,
      createdBy: principal?.user.username ?? null,
    });
    audit({
      detail: {
        deployment: deployment.id,
        ref: deployment.ref,
        ...(body.commit ? { commit: body.commit } : {}),
        ...(body.pull ? { pull: true } : {}),
      },
    });
    return reply(202, { deployment });
  },
);
