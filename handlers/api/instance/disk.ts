import { json } from '../../../lib/http/respond.js';
import { diskUsage } from '../../../lib/instance/disk.js';
import type { Handler } from '../../../lib/http/handler.js';

/** Engine disk usage by kind: images, containers, volumes, build cache. */
export const GET: Handler = async (_req, { env }) => json(await diskUsage(env.engine));
