import { z } from 'zod';
import { checkTokenGrant, createApiToken, listApiTokens } from '#lib/auth/tokens.js';
import { apiTokenSchema, newApiTokenSchema, permissionSchema } from '#lib/api/auth.js';
import { items } from '#lib/api/common.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    permission: 'self.read',
    summary: "The caller's API tokens (never their values)",
    responses: { 200: items(apiTokenSchema) },
  },
  async (_req, { env, principal, reply }) =>
    reply(200, { items: await listApiTokens(env.db, principal!.user.id) }),
);

// A token outlives the session that made it: minting one is as sensitive as the other step-up operations.
export const POST = route(
  {
    permission: 'self.manage',
    summary: 'Mint an API token (its value is shown only in this answer)',
    stepUp: true,
    body: z.strictObject({
      name: z.string().trim().min(1).max(64),
      expires_at: z.iso
        .datetime({ offset: true })
        .refine((s) => Date.parse(s) > Date.now(), 'must be in the future')
        .transform((s) => new Date(s).toISOString())
        .nullable()
        .optional(),
      // Absent or null: the token acts with every permission (and on every app) its owner holds.
      scopes: z
        .array(permissionSchema)
        .min(1)
        .max(64)
        .nullable()
        .optional()
        .describe('Permission names, each one the creator holds'),
      app_ids: z
        .array(z.string().min(1).max(64))
        .min(1)
        .max(1000)
        .nullable()
        .optional()
        .describe('Apps the token is limited to'),
    }),
    responses: {
      201: newApiTokenSchema,
    },
    audit: { action: 'auth.api_token_created' },
  },
  async (_req, { env, principal, body, reply, audit }) => {
    const p = principal!;
    const grant = await checkTokenGrant(
      env.db,
      { userId: p.user.id, tokenId: p.kind === 'token' ? p.credentialId : null },
      body,
    );
    const created = await createApiToken(
      env.db,
      p.user.id,
      body.name,
      body.expires_at ?? null,
      env.now(),
      grant,
    );
    audit({
      target: created.id,
      detail: {
        name: created.name,
        expires_at: created.expires_at,
        scopes: created.scopes,
        app_ids: created.app_ids,
      },
    });
    return reply(201, created);
  },
);
