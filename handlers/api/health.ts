import { text, JSON_TYPE } from '../../lib/http/respond.js';
import { HttpError } from '../../lib/http/errors.js';
import { ping } from '../../lib/db/index.js';
import type { Handler, HandlerModule } from '../../lib/http/handler.js';

export const auth: HandlerModule['auth'] = 'public';

const OK = JSON.stringify({ status: 'ok', db: 'ok' });

export const GET: Handler = (_req, { env }) => {
  try {
    ping(env.db);
  } catch {
    throw new HttpError('service_unavailable', 'Database is not answering');
  }
  return text(OK, 200, JSON_TYPE);
};
