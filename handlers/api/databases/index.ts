import { json } from '../../../lib/http/respond.js';
import { listDatabases } from '../../../lib/databases/index.js';
import type { Handler } from '../../../lib/http/handler.js';

/** The fleet's databases with their volumes' sizes on disk. */
export const GET: Handler = async (_req, { env }) => json({ items: await listDatabases(env, null, true) });
