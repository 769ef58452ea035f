// GET /api/apps: a page of apps by name with their derived status, where each answers and its
// newest deployment, and the proxy's state (an app can run while no URL reaches it). Every part is
// read for the page only, so a list of 1,000 apps costs what its first page costs.
import type { Services } from '../http/handler.js';
import { lastDeployments, pageApps } from './store.js';
import { currentStatuses } from './status.js';
import { appUrls, type AppUrl } from '../proxy/urls.js';
import { proxyHealth, type ProxyHealth } from '../proxy/health.js';
import type { App } from './model.js';
import type { Deployment } from './deployment.js';

export interface AppListQuery {
  cursor?: string;
  limit: number;
  q?: string;
}

export type LastDeployment = Pick<
  Deployment,
  'id' | 'status' | 'trigger' | 'commit' | 'commit_subject' | 'created_by' | 'created_at' | 'finished_at'
>;

export interface AppListItem extends App {
  urls: AppUrl[];
  last_deployment: LastDeployment | null;
}

export interface AppListPage {
  items: AppListItem[];
  next_cursor?: string;
  total: number;
  proxy: ProxyHealth;
}

const summary = (d: Deployment): LastDeployment => ({
  id: d.id,
  status: d.status,
  trigger: d.trigger,
  commit: d.commit,
  commit_subject: d.commit_subject,
  created_by: d.created_by,
  created_at: d.created_at,
  finished_at: d.finished_at,
});

/** `appIds`: the apps the caller may see (null: every app). */
export async function listAppPage(
  env: Services,
  query: AppListQuery,
  appIds: readonly string[] | null,
): Promise<AppListPage> {
  const page = await pageApps(env.db, {
    after: query.cursor,
    limit: query.limit,
    search: query.q,
    appIds,
  });
  const ids = page.apps.map((a) => a.id);
  const [apps, last, urls] = await Promise.all([
    currentStatuses(env, page.apps),
    lastDeployments(env.db, ids),
    appUrls(env, ids),
  ]);
  const items = apps.map((a) => {
    const d = last.get(a.id);
    return { ...a, urls: urls.get(a.id) ?? [], last_deployment: d ? summary(d) : null };
  });
  const out: AppListPage = { items, total: page.total, proxy: proxyHealth(env.edge.proxy) };
  if (page.more && items.length) out.next_cursor = items[items.length - 1]!.name;
  return out;
}
