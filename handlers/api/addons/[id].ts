import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { getAddon } from '../../../lib/addons/catalog.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

const params = z.object({ id: z.string().regex(/^[a-z0-9-]{1,40}$/, 'not an add-on id') });
export const schema: HandlerModule['schema'] = { params };

export const GET: Handler<z.infer<typeof params>> = (_req, { params }) => {
  const { compose, ...addon } = getAddon(params.id);
  return json({ addon: { ...addon, compose } });
};
