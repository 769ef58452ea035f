// POST /api/instance/reset: every app goes, with its containers, networks, volumes, images,
// domains and secrets (the same path as deleting one app, volumes included); operators, tokens,
// audit and instance settings stay. One app failing does not stop the others: the answer says
// which were removed and which failed (a retry finishes them: every step is idempotent).
import type { Services } from '../http/handler.js';
import type { App } from '../apps/model.js';
import { toApp } from '../apps/model.js';
import { deleteApp } from '../apps/ops.js';
import { ACTIVE } from '../apps/deployment.js';
import { activeDeploymentIds, allAppRows } from '../apps/store.js';

export interface ResetResult {
  removed: Array<{ id: string; name: string }>;
  failed: Array<{ id: string; name: string; error: string }>;
}

export async function resetInstance(env: Services): Promise<ResetResult> {
  const rows = await allAppRows(env.db);
  const out: ResetResult = { removed: [], failed: [] };
  for (const row of rows) {
    const app: App = toApp(row);
    try {
      for (const id of await activeDeploymentIds(env.db, app.id, ACTIVE))
        await env.deployments.cancel(app, id).catch(() => {});
      await deleteApp(env, app.id, { volumes: true });
      out.removed.push({ id: app.id, name: app.name });
    } catch (e) {
      out.failed.push({
        id: app.id,
        name: app.name,
        error: (e as Error).message.split('\n')[0]!.slice(0, 300),
      });
    }
  }
  return out;
}
