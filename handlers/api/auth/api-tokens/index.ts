import { z } from 'zod';
import { json } from '../../../../lib/http/respond.js';
import { createApiToken, listApiTokens } from '../../../../lib/auth/tokens.js';
import type { Handler, HandlerModule } from '../../../../lib/http/handler.js';

// A token outlives the session that made it: minting one is as sensitive as the other step-up operations.
export const stepUp: HandlerModule['stepUp'] = ['POST'];

const body = z.strictObject({
  name: z.string().trim().min(1).max(64),
  expires_at: z.iso
    .datetime({ offset: true })
    .refine((s) => Date.parse(s) > Date.now(), 'must be in the future')
    .transform((s) => new Date(s).toISOString())
    .nullable()
    .optional(),
});
export const schema: HandlerModule['schema'] = { body: { POST: body } };

export const GET: Handler = async (_req, { env, principal }) => json({ items: await listApiTokens(env.db, principal!.user.id) });

export const POST: Handler<{}, z.infer<typeof body>> = async (_req, { env, principal, body, audit }) => {
  const created = await createApiToken(env.db, principal!.user.id, body.name, body.expires_at ?? null, env.now());
  audit({ action: 'auth.api_token_created', target: created.id, detail: { name: created.name, expires_at: created.expires_at } });
  return json(created, 201);
};
