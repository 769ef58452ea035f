import { json } from '../../../lib/http/respond.js';
import { overview } from '../../../lib/backups/index.js';
import type { Handler } from '../../../lib/http/handler.js';

export const GET: Handler = async (_req, { env }) => json(await overview(env));
