import { json } from '../../../lib/http/respond.js';
import { unavailable } from '../../../lib/http/errors.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

export const stepUp: HandlerModule['stepUp'] = ['POST'];

/** 202 at once; the drain and the restart begin once this answer is on its way. */
export const POST: Handler = (_req, { env, audit }) => {
  const restart = env.requestRestart;
  if (!restart) throw unavailable('This host cannot restart the control plane (run it with `svc serve`)');
  audit({ action: 'instance.restart' });
  setTimeout(restart, 100).unref();
  return json({ restarting: true }, 202);
};
