import { Readable } from 'node:stream';
import { Response } from '../../../../../../../lib/http/respond.js';
import { getApp } from '../../../../../../../lib/apps/store.js';
import { getRun } from '../../../../../../../lib/backups/store.js';
import { openDownload } from '../../../../../../../lib/backups/run.js';
import type { Handler, HandlerModule } from '../../../../../../../lib/http/handler.js';
import { runParams, type RunParams } from '../../_schemas.js';

export const schema: HandlerModule['schema'] = { params: runParams };

/** The decrypted, still gzip-compressed dump, streamed after the whole artifact authenticated. */
export const GET: Handler<RunParams> = async (_req, { env, params, audit }) => {
  const app = await getApp(env.db, params.id);
  const run = await getRun(env, params.id, params.rid);
  const body = await openDownload(env, run);
  audit({ action: 'backup.downloaded', target: params.id, detail: { run: run.id } });
  return new Response(Readable.toWeb(body) as unknown as ReadableStream, {
    status: 200,
    headers: { 'content-type': 'application/octet-stream', 'content-disposition': `attachment; filename="${app.name}-${run.id}.gz"` },
  });
};
