import { json } from '../../../../../lib/http/respond.js';
import { badRequest, notFound } from '../../../../../lib/http/errors.js';
import { getApp } from '../../../../../lib/apps/store.js';
import { knownHostsFile, privateKey } from '../../../../../lib/keys/store.js';
import { testConnection } from '../../../../../lib/git/ssh.js';
import type { Handler, HandlerModule } from '../../../../../lib/http/handler.js';
import { appParams, type AppParams } from '../../_shared.js';

export const schema: HandlerModule['schema'] = { params: appParams };

// Runs `git ls-remote` with the app's key against its repository; the forge's words come back cleaned.
export const POST: Handler<AppParams> = async (_req, { env, params, audit }) => {
  const app = await getApp(env.db, params.id);
  if (app.source.type !== 'git') throw badRequest('Only git apps have a repository to connect to', [{ field: 'source.type', message: 'not git' }]);
  const key = await privateKey(env.db, env.sealer, app.id);
  if (!key) throw notFound('This app has no deploy key: POST /api/apps/{id}/ssh-key/regenerate creates one');
  const result = await testConnection({ url: app.source.repo_url, privateKey: key, knownHostsFile: knownHostsFile(env.config.dataDir, app.id) });
  audit({ action: 'app.ssh_key_tested', target: app.id, detail: { ok: result.ok } });
  return json(result);
};
