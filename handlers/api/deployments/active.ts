import { json } from '../../../lib/http/respond.js';
import { listActive } from '../../../lib/deploy/index.js';
import type { Handler } from '../../../lib/http/handler.js';

/** Non-terminal deployments of every app, oldest first. */
export const GET: Handler = async (_req, { env }) => json({ items: await listActive(env.db) });
