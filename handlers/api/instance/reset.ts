import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { resetInstance } from '../../../lib/instance/reset.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

export const stepUp: HandlerModule['stepUp'] = ['POST'];
const body = z.strictObject({ confirm: z.literal('RESET', { error: 'confirm must be exactly "RESET"' }) });
export const schema: HandlerModule['schema'] = { body: { POST: body } };

/** Removes every app with everything it owns; operators, tokens, audit and settings stay. */
export const POST: Handler<unknown, z.infer<typeof body>> = async (_req, { env, audit }) => {
  const r = await resetInstance(env);
  audit({ action: 'instance.reset', detail: { removed: r.removed.map((a) => a.name), failed: r.failed.map((a) => a.name) } });
  return json(r);
};
