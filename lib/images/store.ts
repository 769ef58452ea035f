// The deployment rows image retention reads: which deployments just fell out of the newest
// SVC_KEEP_IMAGES, with the images they ran and the ones they pulled.
import type { Db } from '../db/index.js';

export interface ReleasedDeployment {
  id: string;
  images: Record<string, string>;
  /** `<repository>@<digest>` this deployment pulled. */
  pulled: string[];
}

/**
 * The app's deployments that ran images, past the newest `keep`, newest first: at most `window`
 * of them (each prune releases the ones that just fell out; older ones were released before).
 */
export async function releasedDeployments(
  db: Db,
  appId: string,
  keep: number,
  window = 20,
): Promise<ReleasedDeployment[]> {
  const rows = await db
    .selectFrom('deployments')
    .select(['id', 'images', 'pulled'])
    .where('app_id', '=', appId)
    .where('images', 'is not', null)
    .orderBy('id', 'desc')
    .limit(window)
    .offset(keep)
    .execute();
  return rows.map((r) => ({
    id: r.id,
    images: JSON.parse(r.images!) as Record<string, string>,
    pulled: r.pulled ? (JSON.parse(r.pulled) as string[]) : [],
  }));
}

/** The app's deployment ids that ran images (for removing every keep tag of a deleted app). */
export async function deploymentsWithImages(db: Db, appId: string): Promise<ReleasedDeployment[]> {
  return releasedDeployments(db, appId, 0, 100_000);
}
