// Images a rollback may need stay on the engine: every image a deployment runs but did not build
// gets a tag of its own for that deployment (`svc/<app>-<service>:<deployment>`, the form built
// images have), so it survives its own tag moving and a prune of untagged images. When the
// deployment falls out of the newest SVC_KEEP_IMAGES the tag goes, and an image this control
// plane pulled that nothing names any more goes with it. Images anyone else named are never removed.
import type { Db } from '../db/index.js';
import { guard, isNotFound, type Engine } from '../docker/engine.js';
import { imageTag } from '../docker/names.js';
import { isBuiltImage } from './rollback.js';
import { releasedDeployments, type ReleasedDeployment } from './store.js';

function splitTag(tag: string): { repo: string; tag: string } {
  const i = tag.lastIndexOf(':');
  return { repo: tag.slice(0, i), tag: tag.slice(i + 1) };
}

/** Tags the images of one deployment that it did not build. */
export async function keepDeploymentImages(
  engine: Engine,
  app: string,
  deploymentId: string,
  images: Record<string, string>,
): Promise<void> {
  await guard(engine, async () => {
    for (const [service, ref] of Object.entries(images)) {
      if (isBuiltImage(ref)) continue;
      await engine.docker.getImage(ref).tag(splitTag(imageTag(app, service, deploymentId)));
    }
  });
}

/** Releases the kept images of the app's deployments past the newest `keep`. */
export async function pruneKeptImages(
  deps: { engine: Engine; db: Db },
  app: { id: string; name: string },
  keep: number,
  log: (line: string) => void,
): Promise<string[]> {
  const released: string[] = [];
  for (const d of await releasedDeployments(deps.db, app.id, keep))
    released.push(...(await releaseDeployment(deps.engine, app.name, d, log)));
  if (released.length)
    log(`released ${released.length} kept image reference(s) of deployments past the newest ${keep}`);
  return released;
}

/** Removes one deployment's keep tags, then the images it pulled that are now named by nothing. */
export async function releaseDeployment(
  engine: Engine,
  app: string,
  d: ReleasedDeployment,
  log: (line: string) => void,
): Promise<string[]> {
  const out: string[] = [];
  for (const [service, ref] of Object.entries(d.images)) {
    if (isBuiltImage(ref)) continue;
    const tag = imageTag(app, service, d.id);
    if (await removeRef(engine, tag, log)) out.push(tag);
  }
  for (const ref of d.pulled) {
    const info = await guard(engine, () => engine.docker.getImage(ref).inspect()).catch((e) =>
      isNotFound(e) ? null : Promise.reject(e),
    );
    const tags = (info?.RepoTags ?? []).filter((t) => t !== '<none>:<none>');
    if (info && !tags.length && (await removeRef(engine, ref, log))) out.push(ref);
  }
  return out;
}

/** Untags (or, for an image's last name, removes) one reference; a 409 (in use) keeps it. */
async function removeRef(engine: Engine, ref: string, log: (line: string) => void): Promise<boolean> {
  try {
    await guard(engine, () => engine.docker.getImage(ref).remove({ noprune: false }));
    return true;
  } catch (e) {
    const status = (e as { statusCode?: number }).statusCode;
    if (status !== 404 && status !== 409) throw e;
    if (status === 409) log(`kept ${ref}: still in use`);
    return false;
  }
}
