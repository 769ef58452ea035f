// Redis: the official image with a password and snapshots (no append-only file). A dump is the
// RDB snapshot `redis-cli --rdb` streams; a restore puts it back as dump.rdb, which Redis loads
// when it starts.
import type { Readable } from 'node:stream';
import { execCapture, execStream, type ExecHandle } from '../exec.js';
import { guard } from '../../docker/index.js';
import { putFile, waitHealthy } from '../container.js';
import {
  failIfNonZero,
  type DatabaseEngine,
  type EngineDeps,
  type ScratchServer,
  type Target,
} from './engine.js';

const DATA = '/data';
const auth = (t: Target) => ({ env: [`REDISCLI_AUTH=${t.password}`] });

function dump(deps: EngineDeps, t: Target): Promise<ExecHandle> {
  return execStream(deps.engine, t.container, ['redis-cli', '-h', '127.0.0.1', '--rdb', '-'], {
    ...auth(t),
    stoppable: true,
  });
}

/** Stops the server, puts the snapshot into its data volume, starts it again. */
async function restore(deps: EngineDeps, t: Target, dump: () => Promise<Readable>): Promise<void> {
  const { engine } = deps;
  const c = engine.docker.getContainer(t.container);
  await guard(engine, () =>
    c.stop({ t: 30 }).catch((e) => {
      if ((e as { statusCode?: number }).statusCode !== 304) throw e;
    }),
  );
  await putFile(deps, t.container, DATA, 'dump.rdb', dump);
  await guard(engine, () => c.start());
  await waitHealthy(engine, t.container);
}

/** The snapshot goes in before the server first starts; then its keys are counted. */
async function verify(deps: EngineDeps, s: ScratchServer, dump: () => Promise<Readable>): Promise<string> {
  const { target: t } = s;
  await putFile(deps, t.container, DATA, 'dump.rdb', dump);
  await s.start();
  const r = await execCapture(deps.engine, t.container, ['redis-cli', '-h', '127.0.0.1', 'DBSIZE'], auth(t));
  failIfNonZero('redis-cli DBSIZE', r);
  const n = Number(r.stdout.trim());
  if (!Number.isInteger(n)) throw new Error(`DBSIZE answered ${r.stdout.trim().slice(0, 80)}`);
  return `DBSIZE ${n}`;
}

export const redis: DatabaseEngine = {
  spec: {
    engine: 'redis',
    versions: ['7.2', '7'],
    default_version: '7.2',
    images: { '7.2': 'redis:7.2.5-bookworm', '7': 'redis:7.0.15-bookworm' },
    port: 6379,
    dataPath: DATA,
    defaultEnvVar: 'REDIS_URL',
  },
  // One database per server: number 0, its user the default one.
  names: () => ({ name: '0', username: 'default' }),
  newSecrets: (random) => ({ password: random() }),
  connectionUrl: (r, password) => `redis://default:${encodeURIComponent(password)}@${r.host}:${r.port}/0`,
  // A service snapshots every minute that saw a write.
  container: (t, purpose) => ({
    Env: [`REDIS_PASSWORD=${t.password}`],
    Cmd: [
      'redis-server',
      '--requirepass',
      t.password,
      '--appendonly',
      'no',
      ...(purpose === 'service' ? ['--save', '60', '1'] : []),
    ],
  }),
  // A constant script: the password comes from the container's environment.
  probe: () => ['CMD-SHELL', 'REDISCLI_AUTH="$REDIS_PASSWORD" redis-cli ping | grep -q PONG'],
  dumpClient: 'redis-cli --rdb',
  dump,
  restore,
  verify,
};
