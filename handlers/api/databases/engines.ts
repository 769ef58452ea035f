import { json } from '../../../lib/http/respond.js';
import { listEngines } from '../../../lib/databases/catalog.js';
import type { Handler } from '../../../lib/http/handler.js';

export const GET: Handler = () => json({ items: listEngines() });
