import type { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { importSpec, specSchema } from '../../../lib/apps/spec.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

export const schema: HandlerModule['schema'] = { body: { POST: specSchema } };

export const POST: Handler<{}, z.infer<typeof specSchema>> = async (_req, { env, body, audit }) => {
  const { app, missing_secrets } = await importSpec(env, body);
  audit({ action: 'app.imported', target: app.id, detail: { name: app.name } });
  return json({ app, missing_secrets }, 201);
};
