import { instanceInfo } from '#lib/instance/info.js';
import { route } from '#lib/http/route.js';
import { instanceInfoSchema } from '#lib/api/instance.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'Versions, uptime and the engine of this instance',
    responses: { 200: instanceInfoSchema },
  },
  async (_req, { env, reply }) => reply(200, await instanceInfo(env)),
);
