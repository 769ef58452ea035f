// Where artifacts live. Local: <data>/backups/<app id | instance>/<run id>.svcbak, files 0600, written to a
// `.part` name and renamed when complete, so a partial artifact is never taken for a whole one.
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, readdir, rename, rm } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import type { Services } from '../http/handler.js';
import type { BackupConfigTable } from '../db/schema.js';
import { s3Binding, type Destination } from './config.js';
import { s3Store } from './s3.js';

import type { ArtifactStore } from './artifact.js';
export type { ArtifactStore };

const KEY = /^(?:[0-9a-z]{26}|instance)\/[0-9a-z]{26}\.svcbak$/;

export function localStore(dataDir: string): ArtifactStore {
  const root = join(dataDir, 'backups');
  const path = (key: string) => {
    if (!KEY.test(key)) throw new Error('bad artifact key');
    return join(root, key);
  };
  return {
    async put(key, body) {
      const p = path(key);
      await mkdir(dirname(p), { recursive: true, mode: 0o700 });
      await pipeline(body, createWriteStream(`${p}.part`, { mode: 0o600, flags: 'wx' }));
      await rename(`${p}.part`, p);
    },
    async get(key) {
      return createReadStream(path(key));
    },
    localPath: path,
    async remove(key) {
      const p = path(key);
      await rm(`${p}.part`, { force: true });
      await rm(p, { force: true });
    },
    async sweepPartials() {
      for (const app of await readdir(root).catch(() => [] as string[])) {
        for (const f of await readdir(join(root, app)).catch(() => [] as string[]))
          if (f.endsWith('.part')) await rm(join(root, app, f), { force: true });
      }
    },
  };
}

/** The store of a config: an app's backup config, or the instance backup's (id `instance`). */
export function destinationOf(
  env: Services,
  cfg: Pick<BackupConfigTable, 'id' | 'destination' | 'secret_sealed'> | null,
): ArtifactStore {
  const dest = cfg ? (JSON.parse(cfg.destination) as Destination) : null;
  if (dest?.type === 's3') {
    const id = cfg!.id;
    const sealed = cfg!.secret_sealed;
    return s3Store(async () => {
      if (!sealed) throw new Error('the S3 secret access key is not set');
      return {
        ...dest,
        prefix: dest.prefix ?? '',
        secret_access_key: env.sealer.open(sealed, s3Binding(id)),
      };
    });
  }
  return localStore(env.config.dataDir);
}
