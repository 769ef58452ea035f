import { z } from 'zod';
import { instanceConfigView, instancePutNeedsStepUp, putInstanceConfig } from '#lib/backups/instance.js';
import { route } from '#lib/http/route.js';
import { instanceBackupSchema } from '#lib/api/backups.js';
import { destinationBody } from '../../apps/[id]/backups/_lib.js';

const one = z.object({ backup: instanceBackupSchema });
const body = z.strictObject({
  schedule: z.string().max(200).optional(),
  keep_last: z.number().optional(),
  destination: destinationBody.optional(),
  enabled: z.boolean().optional(),
});

export const GET = route(
  {
    permission: 'instance.read',
    summary: 'The instance backup configuration (defaults until saved)',
    responses: { 200: one },
  },
  async (_req, { env, reply }) => reply(200, { backup: await instanceConfigView(env) }),
);

export const PUT = route(
  {
    permission: 'instance.admin',
    summary: 'Change the instance backup configuration (fields not given stay as they are)',
    stepUpWhen: 'the change lowers keep_last or changes the destination',
    body,
    responses: { 200: one },
    audit: { action: 'instance.backup_updated' },
  },
  async (_req, { env, body, reply, audit, requireStepUp }) => {
    // Fewer copies kept, or copies of every secret of the instance going elsewhere.
    if (await instancePutNeedsStepUp(env, body)) requireStepUp();
    await putInstanceConfig(env, body);
    audit({ detail: { fields: Object.keys(body) } });
    return reply(200, { backup: await instanceConfigView(env) });
  },
);
