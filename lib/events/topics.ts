// Per-resource topics name an app (logs:, stats:), a deployment (build:) or a run (run:) that must exist:
// a typo or a deleted resource gets an answer instead of a subscription that never speaks.
import type { Db } from '../db/index.js';

/** null when the topic's resource exists (or the topic names none), else what is missing. */
export async function missingTopicResource(db: Db, topic: string): Promise<string | null> {
  const at = topic.indexOf(':');
  if (at < 0) return null;
  const kind = topic.slice(0, at);
  const id = topic.slice(at + 1);
  if (kind === 'logs' || kind === 'stats') {
    const app = await db
      .selectFrom('apps')
      .select('id')
      .where('id', '=', id)
      .where('deleting_at', 'is', null)
      .executeTakeFirst();
    return app ? null : `no app with id "${id}"`;
  }
  if (kind === 'build') {
    const d = await db.selectFrom('deployments').select('id').where('id', '=', id).executeTakeFirst();
    return d ? null : `no deployment with id "${id}"`;
  }
  if (kind === 'run') {
    const r = await db.selectFrom('job_runs').select('id').where('id', '=', id).executeTakeFirst();
    return r ? null : `no run with id "${id}"`;
  }
  return null;
}
