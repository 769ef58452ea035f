import { Readable } from 'node:stream';
import { Response } from '#lib/http/respond.js';
import { getApp } from '#lib/apps/store.js';
import { getRun } from '#lib/backups/store.js';
import { openDownload } from '#lib/backups/download.js';
import { raw, route, type TypedResponse } from '#lib/http/route.js';
import { runParams } from '../../_lib.js';

/** The decrypted, still gzip-compressed dump, streamed after the whole artifact authenticated. */
export const GET = route(
  {
    permission: 'app.admin',
    summary:
      'Download a backup run (the gzip-compressed dump, decrypted once the whole artifact authenticated)',
    params: runParams,
    responses: { 200: raw('application/octet-stream') },
    audit: { action: 'backup.downloaded', target: (c) => c.params.id },
  },
  async (_req, { env, params, audit }) => {
    const app = await getApp(env.db, params.id);
    const run = await getRun(env.db, params.id, params.rid);
    const body = await openDownload(env, run);
    audit({ detail: { run: run.id } });
    // A stream, which reply() (string bodies) does not carry: the status and type are the declared ones.
    return new Response(Readable.toWeb(body) as unknown as ReadableStream, {
      status: 200,
      headers: {
        'content-type': 'application/octet-stream',
        'content-disposition': `attachment; filename="${app.name}-${run.id}.gz"`,
      },
    }) as TypedResponse<200>;
  },
);
