import { z } from 'zod';
import { getApp } from '#lib/apps/store.js';
import { createHook, hookInfo, removeHook } from '#lib/hooks/index.js';
import { deployHookSchema } from '#lib/api/registries.js';
import { route } from '#lib/http/route.js';
import { appParams } from '../_lib.js';

export const GET = route(
  {
    permission: 'app.read',
    summary: 'Whether the app has a deploy hook, and when it was made and last called (never its URL)',
    params: appParams,
    responses: { 200: deployHookSchema },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    return reply(200, await hookInfo(env, params.id));
  },
);

// The only time the URL is shown: its token is stored as a hash.
export const POST = route(
  {
    permission: 'app.triggers',
    summary:
      'Make a deploy hook: a secret URL that pulls and redeploys the app (shown only in this answer; the old one stops working)',
    stepUp: true,
    params: appParams,
    responses: { 200: z.object({ url: z.string() }) },
    audit: { action: 'app.deploy_hook_created', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply, audit }) => {
    await getApp(env.db, params.id);
    const hook = await createHook(env, params.id);
    audit({ detail: { hook_id: hook.id } });
    return reply(200, { url: hook.url });
  },
);

export const DELETE = route(
  {
    permission: 'app.triggers',
    summary: "Remove the app's deploy hook (its URL answers 404 from now on)",
    params: appParams,
    responses: { 204: null },
    audit: { action: 'app.deploy_hook_removed', target: (c) => c.params.id },
  },
  async (_req, { env, params, reply }) => {
    await getApp(env.db, params.id);
    await removeHook(env, params.id);
    return reply(204);
  },
);
