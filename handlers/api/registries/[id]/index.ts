import { z } from 'zod';
import { deleteRegistry, getRegistry, updateRegistry } from '#lib/registries/index.js';
import { registryParams, registryPatch } from '#lib/registries/schemas.js';
import { registrySchema } from '#lib/api/registries.js';
import { route } from '#lib/http/route.js';

export const PATCH = route(
  {
    permission: 'instance.admin',
    summary: "Change a registry's host, username or password",
    stepUp: true,
    params: registryParams,
    body: registryPatch,
    responses: { 200: z.object({ registry: registrySchema }) },
    audit: { action: 'registry.updated', target: (c) => c.params.id },
  },
  async (_req, { env, params, body, reply, audit }) => {
    const before = await getRegistry(env, params.id);
    const registry = await updateRegistry(env, params.id, body);
    audit({
      detail: {
        host: registry.host,
        ...(registry.host !== before.host ? { host_before: before.host } : {}),
        username: registry.username,
        password_changed: body.password !== undefined,
      },
    });
    return reply(200, { registry });
  },
);

export const DELETE = route(
  {
    permission: 'instance.admin',
    summary: "Remove a registry's credentials (pulls from that host go without them)",
    params: registryParams,
    responses: { 204: null },
    audit: { action: 'registry.deleted', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    const registry = await getRegistry(env, params.id);
    await deleteRegistry(env, params.id);
    audit({ detail: { host: registry.host, username: registry.username } });
    return reply(204);
  },
);
