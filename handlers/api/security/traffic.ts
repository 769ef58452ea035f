import { json } from '../../../lib/http/respond.js';
import { disabledTrafficSnapshot } from '../../../lib/traffic/monitor.js';
import type { Handler } from '../../../lib/http/handler.js';

export const GET: Handler = (_req, { env }) => {
  const s = env.config.security;
  if (!env.monitor) return json(disabledTrafficSnapshot({ windowSeconds: s.windowSeconds, requestThreshold: s.requestThreshold, errorThreshold: s.errorThreshold }));
  return json(env.monitor.snapshot());
};
