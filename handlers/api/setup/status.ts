import { json } from '../../../lib/http/respond.js';
import { countUsers } from '../../../lib/auth/users.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

export const auth: HandlerModule['auth'] = 'public';

export const GET: Handler = async (_req, { env }) => json({ open: (await countUsers(env.db)) === 0 });
