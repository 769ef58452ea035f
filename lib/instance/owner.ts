// The instance id every engine object the control plane creates is labelled with (svc.instance),
// and the adoption of objects made before that label existed.
//
// Adoption: engine labels cannot be changed after creation, so objects an older build made (no
// svc.instance) are recorded by id instead, once: the first boot that creates the instance id on
// a database that already has apps lists the engine's objects carrying svc.managed and naming an
// app (or database) of this database, and stores their ids. From then on an object is ours by its
// label or by being in that list; one made later without the label (by anyone) is never adopted.
// Until the list is taken (the engine was unreachable at that boot) no unlabelled object is ours:
// the pass is retried whenever the engine answers again.
import { randomBytes } from 'node:crypto';
import type { Db } from '../db/index.js';
import { guard, type Engine } from '../docker/engine.js';
import { LABEL_APP, LABEL_MANAGED, LABEL_ROLE } from '../docker/names.js';
import { LABEL_INSTANCE, adoptedKey, type Owner } from '../docker/owner.js';
import { readSetting, settingOnce } from '../db/settings-store.js';
import { anyAppOrDatabase, liveSet } from './store.js';

export const INSTANCE_ID_SETTING = 'instance_id';
/** JSON array of adopted `kind:id` keys; absent while the adoption pass has not run. */
export const ADOPTED_SETTING = 'engine_adopted';
// Same values as lib/databases (not imported: that module pulls in the whole data layer).
const LABEL_DATABASE = 'svc.database';
const LABEL_DATABASE_APP = 'svc.database.app';

export interface LoadedOwner {
  owner: Owner;
  /** The adoption pass still has to run (adoptLegacyObjects). */
  pending: boolean;
}

export async function loadOwner(db: Db): Promise<LoadedOwner> {
  let id = await readSetting(db, INSTANCE_ID_SETTING);
  if (!id) {
    // A database with nothing that could own engine objects (a fresh install) has nothing to adopt.
    if (!(await anyAppOrDatabase(db))) await settingOnce(db, ADOPTED_SETTING, '[]');
    id = await settingOnce(db, INSTANCE_ID_SETTING, randomBytes(16).toString('hex'));
  }
  const adopted = await readSetting(db, ADOPTED_SETTING);
  return {
    owner: { instanceId: id, adopted: new Set(adopted ? (JSON.parse(adopted) as string[]) : []) },
    pending: adopted === null,
  };
}

/** Records the legacy objects of this database's apps and databases; updates engine.owner. Returns how many. */
export async function adoptLegacyObjects(db: Db, engine: Engine): Promise<number> {
  const done = await readSetting(db, ADOPTED_SETTING);
  if (done !== null) {
    engine.owner = {
      instanceId: engine.owner.instanceId,
      adopted: new Set(JSON.parse(done) as string[]),
    };
    return engine.owner.adopted.size;
  }
  const { apps, databases } = await liveSet(db);
  const legacy = (labels: Record<string, string> | null | undefined) =>
    !!labels && labels[LABEL_MANAGED] === 'true' && labels[LABEL_INSTANCE] === undefined;
  const ours = (l: Record<string, string>) =>
    apps.has(l[LABEL_APP] ?? '') ||
    databases.has(l[LABEL_DATABASE] ?? '') ||
    apps.has(l[LABEL_DATABASE_APP] ?? '') ||
    l[LABEL_ROLE] === 'control';
  const keys: string[] = [];
  await guard(engine, async () => {
    const filters = { label: [`${LABEL_MANAGED}=true`] };
    for (const c of await engine.docker.listContainers({ all: true, filters }))
      if (legacy(c.Labels) && ours(c.Labels)) keys.push(adoptedKey('container', c.Id));
    for (const n of await engine.docker.listNetworks({ filters }))
      if (legacy(n.Labels) && ours(n.Labels!)) keys.push(adoptedKey('network', n.Id));
    for (const v of (await engine.docker.listVolumes({ filters })).Volumes ?? [])
      if (legacy(v.Labels) && ours(v.Labels!)) keys.push(adoptedKey('volume', v.Name));
    for (const i of await engine.docker.listImages({ filters }))
      if (legacy(i.Labels) && ours(i.Labels!)) keys.push(adoptedKey('image', i.Id));
  });
  const stored = await settingOnce(db, ADOPTED_SETTING, JSON.stringify(keys));
  engine.owner = { instanceId: engine.owner.instanceId, adopted: new Set(JSON.parse(stored) as string[]) };
  return engine.owner.adopted.size;
}
