import { json } from '../../../../../../lib/http/respond.js';
import { notFound } from '../../../../../../lib/http/errors.js';
import { getApp } from '../../../../../../lib/apps/store.js';
import { revealEnv } from '../../../../../../lib/apps/env.js';
import { recordAudit } from '../../../../../../lib/audit/index.js';
import type { Handler, HandlerModule } from '../../../../../../lib/http/handler.js';
import { envKeyParams } from '../../../_shared.js';

export const schema: HandlerModule['schema'] = { params: envKeyParams };

// A read, but an audited one: who saw which secret, and when.
export const GET: Handler<{ id: string; key: string }> = async (_req, { env, params, principal, client }) => {
  await getApp(env.db, params.id);
  const value = await revealEnv(env.db, env.sealer, params.id, params.key);
  await recordAudit(env.db, {
    actorId: principal!.user.id,
    actor: principal!.user.username,
    via: principal!.kind,
    action: 'app.env_revealed',
    target: params.id,
    ip: client.ip,
    outcome: value === null ? 404 : 200,
    detail: { key: params.key },
  });
  if (value === null) throw notFound(`No variable "${params.key}"`);
  return json({ key: params.key, value });
};
