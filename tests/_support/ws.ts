// For tests and benchmarks of the WebSocket API: a finished deployment row with a build log
// (build: topics are refused for a deployment that does not exist), and an open socket.
import WebSocket from 'ws';
import type { Kysely } from 'kysely';
import type { Database } from '#lib/db/schema.js';

/** The API's WebSocket endpoint of a server at `httpUrl`. */
export function wsUrl(httpUrl: string): string {
  return httpUrl.replace('http', 'ws') + '/api/ws';
}

/**
 * Opens a socket; a refused upgrade rejects with the HTTP status (`status`), before any
 * socket exists.
 */
export function openSocket(url: string, headers: Record<string, string>): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    ws.once('open', () => resolve(ws));
    ws.once('unexpected-response', (_req, res) =>
      reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode })),
    );
    ws.once('error', reject);
  });
}

/** A failed deployment row of an existing app, finished now: no worker will pick it up. */
export async function insertFinishedDeployment(
  db: Kysely<Database>,
  appId: string,
  id: string,
  fields: { commit_subject?: string; error?: string } = {},
): Promise<void> {
  const now = new Date().toISOString();
  await db
    .insertInto('deployments')
    .values({
      id,
      app_id: appId,
      status: 'failed',
      trigger: 'manual',
      ref: null,
      commit_sha: null,
      commit_subject: fields.commit_subject ?? null,
      images: null,
      error: fields.error ?? null,
      rollback_of: null,
      delivery_id: null,
      created_at: now,
      started_at: now,
      finished_at: now,
      updated_at: now,
      waiting: 0,
      pull: 0,
      spec: null,
      commit_wanted: null,
      commit_pin: null,
    })
    .execute();
}

/** Writes `lines` build log rows (seq 1..lines), a thousand an insert, as the builder does. */
export async function insertBuildLog(
  db: Kysely<Database>,
  deploymentId: string,
  lines: number,
  line: (seq: number) => string,
): Promise<void> {
  const at = new Date().toISOString();
  for (let i = 0; i < lines; i += 1000) {
    const rows = [];
    for (let j = i + 1; j <= Math.min(lines, i + 1000); j++)
      rows.push({ deployment_id: deploymentId, seq: j, at, stream: 'build', line: line(j) });
    await db.insertInto('deployment_logs').values(rows).execute();
  }
}
