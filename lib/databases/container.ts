// A database's container as the engines use it: waiting for its health probe, checking it runs
// and is ours, and writing a file into it (the engine needs the size first, so it is spooled).
import { randomBytes } from 'node:crypto';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, rm, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type TarStream from 'tar-stream';
import type { Config } from '../config.js';
import { assertOwnedContainer, guard, isNotFound, isOwned, type Engine } from '../docker/index.js';
import { lazyRequire } from '../util/lazy.js';

// Loaded by the first file written into a container (a Redis restore or verify), not at boot.
const tar = lazyRequire<typeof TarStream>('tar-stream');

export async function waitHealthy(engine: Engine, container: string, timeoutMs = 300_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const info = await guard(engine, () => engine.docker.getContainer(container).inspect());
    const health = info.State?.Health?.Status;
    if (health === 'healthy') return;
    if (!info.State?.Running && !info.State?.Restarting)
      throw new Error(`the database container exited (code ${info.State?.ExitCode})`);
    if (health === 'unhealthy') throw new Error('the database container is unhealthy');
    if (Date.now() > until) throw new Error('the database did not become healthy in time');
    await new Promise((r) => setTimeout(r, 500));
  }
}

export async function assertRunning(engine: Engine, container: string): Promise<void> {
  let info;
  try {
    info = await guard(engine, () => engine.docker.getContainer(container).inspect());
  } catch (e) {
    if (isNotFound(e)) throw new Error('the database container does not exist');
    throw e;
  }
  if (!isOwned(engine, 'container', info.Id, info.Config?.Labels))
    throw new Error('the database container was not made by this control plane');
  if (!info.State?.Running) throw new Error('the database container is not running');
}

/** Writes one file into a (possibly stopped) container's path; the engine needs its size first. */
export async function putFile(
  deps: { engine: Engine; config: Pick<Config, 'dataDir'> },
  container: string,
  dir: string,
  name: string,
  content: () => Promise<Readable>,
): Promise<void> {
  const tmp = await spoolToFile(deps.config.dataDir, await content());
  try {
    const size = (await stat(tmp.path)).size;
    const pack = tar().pack();
    const entry = pack.entry({ name, size, mode: 0o600, uid: 999, gid: 999 }, (err) =>
      err ? pack.destroy(err) : pack.finalize(),
    );
    createReadStream(tmp.path).pipe(entry);
    await assertOwnedContainer(deps.engine, container);
    await guard(deps.engine, () =>
      deps.engine.docker
        .getContainer(container)
        .putArchive(pack as unknown as NodeJS.ReadableStream, { path: dir }),
    );
  } finally {
    await tmp.remove();
  }
}

// In <dataDir>/backups/tmp, beside the artifacts a restore or verify fetches.
async function spoolToFile(
  dataDir: string,
  src: Readable,
): Promise<{ path: string; remove: () => Promise<void> }> {
  const dir = join(dataDir, 'backups', 'tmp');
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const path = join(dir, `${randomBytes(8).toString('hex')}.tmp`);
  await pipeline(src, createWriteStream(path, { mode: 0o600, flags: 'wx' }));
  return { path, remove: () => rm(path, { force: true }) };
}
