import { HttpError } from '../../lib/http/errors.js';
import type { Handler } from '../../lib/http/handler.js';

// The upgrade itself is handled by the runtime before any handler runs; a plain GET lands here.
export const GET: Handler = () => {
  throw new HttpError('bad_request', 'GET /api/ws must be a WebSocket upgrade', undefined, { upgrade: 'websocket' });
};
