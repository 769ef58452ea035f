import { json } from '../../../lib/http/respond.js';
import { listAddons } from '../../../lib/addons/catalog.js';
import type { Handler } from '../../../lib/http/handler.js';

export const GET: Handler = () => json({ items: listAddons() });
