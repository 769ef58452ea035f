import { z } from 'zod';
import { json } from '../../../lib/http/respond.js';
import { HttpError } from '../../../lib/http/errors.js';
import { countUsers, insertUser, PASSWORD_MAX, PASSWORD_MIN, USERNAME_PATTERN } from '../../../lib/auth/users.js';
import { hashPassword } from '../../../lib/auth/passwords.js';
import { checkSetupToken, closeSetup } from '../../../lib/auth/setup.js';
import { recordAudit } from '../../../lib/audit/index.js';
import type { Handler, HandlerModule } from '../../../lib/http/handler.js';

export const auth: HandlerModule['auth'] = 'public';
export const rateLimit: HandlerModule['rateLimit'] = ['POST'];

const body = z.strictObject({
  token: z.string().min(1).max(256),
  username: z.string().regex(USERNAME_PATTERN, 'letters, digits, ".", "_", "@", "-"; at most 64'),
  password: z.string().min(PASSWORD_MIN, `at least ${PASSWORD_MIN} characters`).max(PASSWORD_MAX, `at most ${PASSWORD_MAX} characters`),
});
export const schema: HandlerModule['schema'] = { body: { POST: body } };

export const POST: Handler<{}, z.infer<typeof body>> = async (_req, { env, body, client }) => {
  const closed = () => new HttpError('not_found', 'Setup is closed');
  if ((await countUsers(env.db)) > 0) throw closed();
  if (!(await checkSetupToken(env.config.dataDir, body.token))) throw new HttpError('forbidden', 'Setup token is not valid');
  const hash = await hashPassword(body.password, env.config.passwordCost);
  // Two racing requests with the token: the transaction lets exactly one create the first operator.
  const user = await env.db.transaction().execute(async (tx) => {
    if ((await countUsers(tx)) > 0) throw closed();
    return insertUser(tx, body.username, hash);
  });
  await closeSetup(env.config.dataDir);
  await recordAudit(env.db, { actorId: user.id, actor: user.username, via: 'setup', action: 'setup.admin_created', target: user.id, ip: client.ip, outcome: 201 });
  return json({ user }, 201);
};
