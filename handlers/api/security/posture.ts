import { json } from '../../../lib/http/respond.js';
import { posture } from '../../../lib/security/live.js';
import type { Handler } from '../../../lib/http/handler.js';

// Re-evaluated on every request: there are no stored states to go stale.
export const GET: Handler = async (_req, { env }) => json(await posture(env));
