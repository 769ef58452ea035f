import { listAddons } from '../../../lib/addons/catalog.js';
import { route } from '../../../lib/http/route.js';
import { addonSchema, items } from '../../../lib/api/schemas.js';

export const GET = route({ permission: 'app.read', summary: 'The vetted add-on templates', responses: { 200: items(addonSchema) } }, (_req, { reply }) => reply(200, { items: listAddons() }));
