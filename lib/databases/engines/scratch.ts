// Scratch servers: a throwaway server of a database's engine, on no network, that a backup is
// verified in (the engine restores the dump into it and checks it); removed with its anonymous
// volumes afterwards. One a process died with is swept at boot.
import { randomBytes } from 'node:crypto';
import type { Readable } from 'node:stream';
import type { Services } from '../../http/handler.js';
import type { AppDatabaseTable } from '../../db/schema.js';
import { guard, isNotFound, isOwned, LABEL_SCRATCH, ownedFilter, ownerLabels } from '../../docker/index.js';
import { waitHealthy } from '../container.js';
import { databaseIds } from '../store.js';
import type { DatabaseEngine, EngineDeps, Target } from './engine.js';

const HEALTH = { Interval: 1e9, Timeout: 5e9, Retries: 120, StartPeriod: 120e9 };

/** Restores the dump of `row` into a scratch server of its engine running `image`; the engine's verdict. */
export async function verifyInScratch(
  deps: EngineDeps,
  def: DatabaseEngine,
  image: string,
  row: AppDatabaseTable,
  dump: () => Promise<Readable>,
): Promise<string> {
  const { engine } = deps;
  const pw = randomBytes(18).toString('base64url');
  const t: Target = { container: '', name: row.name, username: row.username, password: pw, root: pw };
  const c = await guard(engine, () =>
    engine.docker.createContainer({
      Image: image,
      ...def.container(t, 'scratch'),
      Healthcheck: { Test: def.probe(t), ...HEALTH },
      Labels: { ...ownerLabels(engine), [LABEL_SCRATCH]: row.id },
      HostConfig: { NetworkMode: 'none', SecurityOpt: ['no-new-privileges'] },
    }),
  );
  t.container = c.id;
  const start = async () => {
    await guard(engine, () => c.start());
    await waitHealthy(engine, c.id);
  };
  try {
    return await def.verify(deps, { container: c, target: t, start }, dump);
  } finally {
    await c.remove({ force: true, v: true }).catch(() => {});
  }
}

/**
 * Scratch servers of a verify the process died during keep running (a whole database server,
 * on no network) until removed: at boot, the ones made for this instance's databases go, with
 * their anonymous volumes. Another control plane's on the same engine are not touched.
 */
export async function sweepScratchServers(deps: Pick<Services, 'engine' | 'db'>): Promise<number> {
  const { engine } = deps;
  const ids = await databaseIds(deps.db);
  if (!ids.size) return 0;
  const list = await guard(engine, () =>
    engine.docker.listContainers({ all: true, filters: ownedFilter(engine, [LABEL_SCRATCH]) }),
  );
  let removed = 0;
  for (const c of list) {
    if (!isOwned(engine, 'container', c.Id, c.Labels) || !ids.has(c.Labels?.[LABEL_SCRATCH] ?? '')) continue;
    await guard(engine, () => engine.docker.getContainer(c.Id).remove({ force: true, v: true })).then(
      () => removed++,
      (e) => {
        if (!isNotFound(e)) throw e;
      },
    );
  }
  return removed;
}
