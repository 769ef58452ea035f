import { z } from 'zod';
import { getAddon } from '#lib/addons/catalog.js';
import { route } from '#lib/http/route.js';
import { addonWithComposeSchema } from '#lib/api/addons.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'One add-on template with its compose file',
    params: z.object({ id: z.string().regex(/^[a-z0-9-]{1,40}$/, 'not an add-on id') }),
    responses: { 200: z.object({ addon: addonWithComposeSchema }) },
  },
  (_req, { params, reply }) => {
    const { compose, ...addon } = getAddon(params.id);
    return reply(200, { addon: { ...addon, compose } });
  },
);
