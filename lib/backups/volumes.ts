// An app volume's backup: Docker reads and writes the tree through a helper container that never
// starts, and a volume's archive is checked by reading it through. A database's dump, restore and verify are its engine's (lib/databases/engines/).
import type { Readable } from 'node:stream';
import type TarStream from 'tar-stream';
import type { Services } from '../http/handler.js';
import { guard, isNotFound, LABEL_SCRATCH, ownerLabels } from '../docker/index.js';
import { ensureEmptyImage, EMPTY_IMAGE } from '../docker/binds.js';
import { lazyRequire } from '../util/lazy.js';

// Loaded by the first backup or restore of a volume, not at boot.
const tar = lazyRequire<typeof TarStream>('tar-stream');

type Deps = Pick<Services, 'engine'>;

async function volumeHelper(
  env: Deps,
  volume: string,
  readOnly: boolean,
  label: string,
): Promise<import('dockerode').Container> {
  try {
    await guard(env.engine, () => env.engine.docker.getVolume(volume).inspect());
  } catch (e) {
    if (isNotFound(e)) throw new Error(`the volume ${volume} does not exist`);
    throw e;
  }
  await ensureEmptyImage(env.engine);
  return guard(env.engine, () =>
    env.engine.docker.createContainer({
      Image: EMPTY_IMAGE,
      Cmd: ['/never-started'],
      Labels: { ...ownerLabels(env.engine), [LABEL_SCRATCH]: label },
      HostConfig: {
        NetworkMode: 'none',
        Mounts: [{ Type: 'volume', Source: volume, Target: '/backup-src', ReadOnly: readOnly }],
      },
    }),
  );
}

export async function dumpVolume(
  env: Deps,
  volume: string,
): Promise<{ stream: Readable; cleanup: () => Promise<void> }> {
  const c = await volumeHelper(env, volume, true, 'volume-dump');
  try {
    const stream = (await guard(env.engine, () =>
      c.getArchive({ path: '/backup-src' }),
    )) as unknown as Readable;
    return {
      stream,
      cleanup: () =>
        c.remove({ force: true }).then(
          () => {},
          () => {},
        ),
    };
  } catch (e) {
    await c.remove({ force: true }).catch(() => {});
    throw e;
  }
}

/** Writes the archived tree back over the volume (entries are `backup-src/...`). */
export async function restoreVolume(env: Deps, volume: string, archive: Readable): Promise<void> {
  const c = await volumeHelper(env, volume, false, 'volume-restore');
  try {
    await guard(env.engine, () => c.putArchive(archive as unknown as NodeJS.ReadableStream, { path: '/' }));
  } finally {
    await c.remove({ force: true }).catch(() => {});
  }
}

/** Volume check: the archive parses to the end; files counted and hashed. */
export async function checkVolumeArchive(archive: Readable): Promise<{ files: number; bytes: number }> {
  const { createHash } = await import('node:crypto');
  const extract = tar().extract();
  let files = 0;
  let bytes = 0;
  await new Promise<void>((resolve, reject) => {
    extract.on('entry', (header, stream, next) => {
      const h = createHash('sha256');
      stream.on('data', (c: unknown) => {
        h.update(c as Buffer);
        bytes += (c as Buffer).length;
      });
      stream.on('end', () => {
        if (header.type === 'file') files++;
        h.digest();
        next();
      });
      stream.on('error', reject);
    });
    extract.on('finish', resolve);
    extract.on('error', reject);
    archive.on('error', reject);
    archive.pipe(extract);
  });
  return { files, bytes };
}
