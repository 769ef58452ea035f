import { z } from 'zod';
import { createRegistry, listRegistries } from '#lib/registries/index.js';
import { registryBody } from '#lib/registries/schemas.js';
import { registrySchema } from '#lib/api/registries.js';
import { route } from '#lib/http/route.js';

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'Stored registry credentials (never a password)',
    responses: { 200: z.object({ items: z.array(registrySchema) }) },
  },
  async (_req, { env, reply }) => reply(200, { items: await listRegistries(env) }),
);

export const POST = route(
  {
    permission: 'instance.admin',
    summary:
      "Store a registry's credentials (the password is sealed); pulls from that host use them (409: the host has some)",
    stepUp: true,
    body: registryBody,
    responses: { 201: z.object({ registry: registrySchema }) },
    audit: { action: 'registry.created' },
  },
  async (_req, { env, body, reply, audit }) => {
    const registry = await createRegistry(env, body);
    audit({ target: registry.id, detail: { host: registry.host, username: registry.username } });
    return reply(201, { registry });
  },
);
