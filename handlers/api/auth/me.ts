import { json } from '../../../lib/http/respond.js';
import type { Handler } from '../../../lib/http/handler.js';

export const GET: Handler = (_req, { principal }) => json({ user: principal!.user, via: principal!.kind });
