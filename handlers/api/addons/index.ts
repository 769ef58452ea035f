import { listAddons } from '#lib/addons/catalog.js';
import { route } from '#lib/http/route.js';
import { addonSchema } from '#lib/api/addons.js';
import { items } from '#lib/api/common.js';

export const GET = route(
  { permission: 'app.read', summary: 'The vetted add-on templates', responses: { 200: items(addonSchema) } },
  (_req, { reply }) => reply(200, { items: listAddons() }),
);
