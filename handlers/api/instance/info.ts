import { json } from '../../../lib/http/respond.js';
import { instanceInfo } from '../../../lib/instance/info.js';
import type { Handler } from '../../../lib/http/handler.js';

export const GET: Handler = async (_req, { env }) => json(await instanceInfo(env));
