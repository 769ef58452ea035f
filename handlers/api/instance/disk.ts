import { diskUsage } from '#lib/instance/disk.js';
import { route } from '#lib/http/route.js';
import { diskUsageSchema } from '#lib/api/instance.js';

/** Engine disk usage by kind: images, containers, volumes, build cache. */
export const GET = route(
  {
    permission: 'instance.read',
    summary: 'Engine disk usage by kind: images, containers, volumes, build cache',
    responses: { 200: diskUsageSchema },
  },
  async (_req, { env, reply }) => reply(200, await diskUsage(env.engine)),
);
