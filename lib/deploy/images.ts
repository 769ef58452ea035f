// Built images are tagged per deployment (svc/<app>-<service>:<deployment id>) and labelled with
// the app and deployment, so the newest N deployments of an app stay available for rollback.
import { guard, isNotFound, type Engine } from '../docker/engine.js';
import { listAppContainers } from '../docker/containers.js';
import { LABEL_APP, LABEL_DEPLOYMENT } from '../docker/names.js';
import { isOwned, ownedFilter } from '../docker/owner.js';

export async function imagesPresent(engine: Engine, images: Record<string, string>): Promise<string[]> {
  const missing: string[] = [];
  await guard(engine, async () => {
    for (const ref of Object.values(images)) {
      try {
        await engine.docker.getImage(ref).inspect();
      } catch (e) {
        if (!isNotFound(e)) throw e;
        missing.push(ref);
      }
    }
  });
  return missing;
}

/** Removes the app's built images beyond the newest `keep` deployments; never one in use. */
export async function pruneImages(
  engine: Engine,
  app: string,
  keep: number,
  log: (line: string) => void,
): Promise<string[]> {
  return guard(engine, async () => {
    const images = await engine.docker.listImages({ filters: ownedFilter(engine, [`${LABEL_APP}=${app}`]) });
    const inUse = new Set((await listAppContainers(engine, app, { runs: true })).map((c) => c.image));
    const byDeployment = new Map<string, typeof images>();
    for (const img of images) {
      const dep = img.Labels?.[LABEL_DEPLOYMENT];
      if (!dep || !isOwned(engine, 'image', img.Id, img.Labels) || img.Labels?.[LABEL_APP] !== app) continue;
      (byDeployment.get(dep) ?? byDeployment.set(dep, []).get(dep)!).push(img);
    }
    // Deployment ids sort by creation time.
    const old = [...byDeployment.keys()].sort().reverse().slice(keep);
    const removed: string[] = [];
    for (const dep of old) {
      for (const img of byDeployment.get(dep)!) {
        const tags = (img.RepoTags ?? []).filter((t) => t !== '<none>:<none>');
        if (tags.some((t) => inUse.has(t)) || inUse.has(img.Id)) continue;
        try {
          for (const t of tags) await engine.docker.getImage(t).remove({ noprune: false });
          if (!tags.length) await engine.docker.getImage(img.Id).remove();
          removed.push(...(tags.length ? tags : [img.Id]));
        } catch (e) {
          // In use by a stopped container, or already gone: leave it for a later prune.
          if (!isNotFound(e)) log(`kept image ${tags[0] ?? img.Id}: ${(e as Error).message.split('\n')[0]}`);
        }
      }
    }
    if (removed.length)
      log(
        `pruned ${removed.length} old image${removed.length === 1 ? '' : 's'} (keeping the newest ${keep} deployments)`,
      );
    return removed;
  });
}

/** Removes the images one deployment built (a failed or canceled build). */
export async function removeDeploymentImages(
  engine: Engine,
  app: string,
  deploymentId: string,
): Promise<void> {
  await guard(engine, async () => {
    const images = await engine.docker.listImages({
      filters: ownedFilter(engine, [`${LABEL_APP}=${app}`, `${LABEL_DEPLOYMENT}=${deploymentId}`]),
    });
    for (const img of images) {
      if (!isOwned(engine, 'image', img.Id, img.Labels)) continue;
      // By tag, not by id: an identical image tagged for another deployment must survive.
      const refs = (img.RepoTags ?? []).filter((t) => t !== '<none>:<none>');
      try {
        for (const ref of refs.length ? refs : [img.Id]) await engine.docker.getImage(ref).remove();
      } catch (e) {
        if (!isNotFound(e) && (e as { statusCode?: number }).statusCode !== 409) throw e;
      }
    }
  });
}
