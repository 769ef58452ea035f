// Installing an add-on: an ordinary app with an inline compose source (lib/compose/inline.ts)
// made from the template, its parameters as the app's env, and a first deployment through the
// same queue and pipeline as any app. Everything is checked before anything is created: a bad
// parameter or a template the compose policy refuses is a 400 with no app left behind.
import type { Services } from '../http/handler.js';
import type { App } from '../apps/model.js';
import { createApp, deleteApp } from '../apps/ops.js';
import { getAppByName } from '../apps/store.js';
import { replaceEnv } from '../apps/env.js';
import { badRequest, HttpError } from '../http/errors.js';
import { inlineComposeProblems } from '../compose/inline.js';
import { getAddon, resolveParams, type Addon } from './catalog.js';

const MAX_PARAM = 1024;

/** The template with SVC_IMAGE_MAP applied to its `image:` lines (a private mirror; local images in tests). */
export function mappedCompose(addon: Addon, imageMap: Readonly<Record<string, string>>): string {
  let text = addon.compose;
  for (const ref of addon.images) {
    const to = imageMap[ref];
    if (to) text = text.split(`image: ${ref}\n`).join(`image: ${to}\n`);
  }
  return text;
}

export async function installAddon(
  env: Services,
  id: string,
  name: string,
  params: Record<string, string> = {},
  createdBy: string | null = null,
): Promise<{ app: App; deployment: unknown; generated_secrets: Record<string, string> }> {
  const addon = getAddon(id);
  for (const [k, v] of Object.entries(params)) {
    // A value is env, interpolated into the parsed tree (never into YAML text), but it still
    // must not carry control characters into a container's environment or a log line.
    if (v.length > MAX_PARAM || /[\x00-\x1f\x7f]/.test(v))
      throw badRequest(
        `Parameter "${k.slice(0, 60)}" must be at most ${MAX_PARAM} characters without control characters`,
        [{ field: `params.${k.slice(0, 60)}`, message: 'invalid value' }],
      );
  }
  const { env: values, generated } = resolveParams(addon, params);
  for (const p of addon.params) {
    if (!p.generated && p.default === null && !values[p.key])
      throw badRequest(`Parameter "${p.key}" is required`, [
        { field: `params.${p.key}`, message: 'required' },
      ]);
  }
  const compose = mappedCompose(addon, env.config.imageMap);
  const problems = inlineComposeProblems(compose, values);
  if (problems.length)
    throw badRequest(
      `The ${addon.name} template with these parameters does not pass the compose policy`,
      problems,
    );
  if (await getAppByName(env.db, name).catch(() => null))
    throw new HttpError('conflict', `An app named "${name}" already exists`);

  const app = await createApp(env, name, { type: 'compose', compose });
  try {
    const secret = new Map(addon.params.map((p) => [p.key, p.secret]));
    await replaceEnv(
      env.db,
      env.sealer,
      app.id,
      Object.entries(values).map(([key, value]) => ({ key, value, secret: secret.get(key) ?? true })),
    );
    const { deployment } = await env.deployments.enqueue(app, { trigger: 'manual', ref: null, createdBy });
    return { app, deployment, generated_secrets: generated };
  } catch (e) {
    // Nothing half-done: the app goes with whatever part of the install failed.
    await deleteApp(env, app.id, { volumes: true }).catch((err) =>
      env.log.warn({ err: String(err), app: name }, 'could not remove a failed add-on install'),
    );
    throw e;
  }
}
