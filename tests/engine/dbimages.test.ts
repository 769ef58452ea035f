// The local database images (scripts/test-images) keep the official images' conventions, so the
// product can run them exactly as it runs the official ones: each server is configured by the
// official environment variables or command, keeps its data in the named volume at the official
// path (across a restart and a new container), listens on its network with password auth only,
// runs unprivileged, and ships the clients the product uses for dumps.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import Docker from 'dockerode';
import { DOCKER_SOCKET } from '../_support/docker.js';
import { needDbImages, type DbImages } from '../_support/dbimages.js';
import { poll } from '../_support/wait.js';

const docker = new Docker({ socketPath: DOCKER_SOCKET });
const RUN = randomBytes(4).toString('hex');
const LABEL = 'svc.test.dbimages';
const labels = { [LABEL]: RUN };
// Quotes and a backslash: the entry points must pass a password through without a shell or SQL
// reading it as syntax.
const PASSWORD = `pw'"\\${randomBytes(6).toString('hex')}`;

after(async () => {
  const filters = JSON.stringify({ label: [`${LABEL}=${RUN}`] });
  for (const c of await docker.listContainers({ all: true, filters })) {
    await docker
      .getContainer(c.Id)
      .remove({ force: true, v: true })
      .catch((e) => console.error('cleanup:', e));
  }
  for (const n of await docker.listNetworks({ filters })) {
    await docker
      .getNetwork(n.Id)
      .remove()
      .catch((e) => console.error('cleanup:', e));
  }
  const vols = await docker.listVolumes({ filters });
  for (const v of vols.Volumes ?? []) {
    await docker
      .getVolume(v.Name)
      .remove()
      .catch((e) => console.error('cleanup:', e));
  }
});

interface Out {
  code: number;
  stdout: string;
  stderr: string;
}

/** The frames of a non-TTY stream, split into stdout and stderr. */
function demux(buf: Buffer): { stdout: string; stderr: string } {
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  let i = 0;
  while (i + 8 <= buf.length) {
    const size = buf.readUInt32BE(i + 4);
    (buf[i] === 2 ? err : out).push(buf.subarray(i + 8, i + 8 + size));
    i += 8 + size;
  }
  return { stdout: Buffer.concat(out).toString(), stderr: Buffer.concat(err).toString() };
}

async function exec(container: string, cmd: string[], env: string[] = []): Promise<Out> {
  const x = await docker
    .getContainer(container)
    .exec({ Cmd: cmd, Env: env, AttachStdout: true, AttachStderr: true });
  const stream = await x.start({ hijack: true, stdin: false });
  const out = new PassThrough();
  const err = new PassThrough();
  const o: Buffer[] = [];
  const e: Buffer[] = [];
  out.on('data', (c: Buffer) => o.push(c));
  err.on('data', (c: Buffer) => e.push(c));
  docker.modem.demuxStream(stream, out, err);
  await new Promise<void>((resolve, reject) => {
    stream.on('end', resolve);
    stream.on('close', resolve);
    stream.on('error', reject);
  });
  const info = await poll(
    'exec to finish',
    async () => {
      const i = await x.inspect();
      return i.Running ? null : i;
    },
    30_000,
    100,
  );
  return {
    code: info.ExitCode ?? -1,
    stdout: Buffer.concat(o).toString(),
    stderr: Buffer.concat(e).toString(),
  };
}

/** A one-shot client container on the network: the server is reached as a remote host would. */
async function client(image: string, network: string, cmd: string[], env: string[] = []): Promise<Out> {
  const c = await docker.createContainer({
    Image: image,
    Cmd: cmd,
    Env: env,
    Labels: labels,
    HostConfig: { NetworkMode: network },
  });
  try {
    await c.start();
    const { StatusCode } = (await c.wait()) as { StatusCode: number };
    const logs = await c.logs({ stdout: true, stderr: true, follow: false });
    return { code: StatusCode, ...demux(logs) };
  } finally {
    await c.remove({ force: true, v: true }).catch(() => {});
  }
}

async function startServer(opts: {
  image: string;
  name: string;
  network: string;
  volume: string;
  path: string;
  env?: string[];
  cmd?: string[];
}): Promise<string> {
  const c = await docker.createContainer({
    name: opts.name,
    Image: opts.image,
    Env: opts.env ?? [],
    ...(opts.cmd ? { Cmd: opts.cmd } : {}),
    Labels: labels,
    HostConfig: {
      NetworkMode: opts.network,
      Mounts: [{ Type: 'volume', Source: opts.volume, Target: opts.path }],
    },
    NetworkingConfig: { EndpointsConfig: { [opts.network]: { Aliases: ['db'] } } },
  });
  await c.start();
  return c.id;
}

async function setup(engine: string): Promise<{ network: string; volume: string; name: string }> {
  const id = `svc-test-dbimg-${RUN}-${engine}`;
  await docker.createNetwork({ Name: id, Labels: labels });
  await docker.createVolume({ Name: id, Labels: labels });
  return { network: id, volume: id, name: id };
}

async function removeContainer(id: string): Promise<void> {
  await docker.getContainer(id).remove({ force: true, v: true });
}

/** The server (pid 1 after the entry point's exec) runs as uid 999, like the official image. */
async function assertUnprivileged(id: string): Promise<void> {
  const r = await exec(id, ['cat', '/proc/1/status']);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /^Uid:\s+999\s+999\s+999\s+999$/m);
}

const READY_MS = 180_000;

test('postgres image: env vars, volume at PGDATA, remote scram auth, pg_dump/pg_restore', async (t) => {
  const images = await needDbImages(t);
  if (!images) return;
  const image = images.postgres;
  const { network, volume, name } = await setup('postgres');
  const env = ['POSTGRES_USER=appuser', `POSTGRES_PASSWORD=${PASSWORD}`, 'POSTGRES_DB=appdb'];
  const spec = { image, network, volume, path: '/var/lib/postgresql/data' };
  // TCP on loopback: the initialisation server listens on the socket only, so this is the real one.
  const ready = (id: string) =>
    poll(
      'postgres to accept connections',
      async () => {
        const r = await exec(id, [
          'pg_isready',
          '-h',
          '127.0.0.1',
          '-p',
          '5432',
          '-U',
          'appuser',
          '-d',
          'appdb',
        ]);
        return r.code === 0;
      },
      READY_MS,
      500,
    );
  const psql = (sql: string, password = PASSWORD) =>
    client(
      image,
      network,
      ['psql', '-X', '-v', 'ON_ERROR_STOP=1', '-h', 'db', '-U', 'appuser', '-d', 'appdb', '-Atc', sql],
      [`PGPASSWORD=${password}`],
    );

  let id = await startServer({ ...spec, name, env });
  await ready(id);
  await assertUnprivileged(id);

  const w = await psql(
    "CREATE TABLE items (id int PRIMARY KEY, label text); INSERT INTO items VALUES (1, 'one'), (2, 'two');",
  );
  assert.equal(w.code, 0, w.stderr);

  const bad = await psql('SELECT 1', 'wrong-password');
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /password authentication failed for user "appuser"/);
  const none = await client(image, network, [
    'psql',
    '-X',
    '-w',
    '-h',
    'db',
    '-U',
    'appuser',
    '-d',
    'appdb',
    '-c',
    'SELECT 1',
  ]);
  assert.notEqual(none.code, 0, 'no password must not log in over the network');

  await docker.getContainer(id).restart();
  await ready(id);
  let r = await psql('SELECT label FROM items ORDER BY id');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'one\ntwo');

  // A new container on the same volume keeps the cluster: the variables only apply to an empty one.
  await removeContainer(id);
  id = await startServer({
    ...spec,
    name,
    env: ['POSTGRES_USER=appuser', 'POSTGRES_PASSWORD=another', 'POSTGRES_DB=appdb'],
  });
  await ready(id);
  r = await psql('SELECT count(*) FROM items');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), '2');

  const dump = await exec(id, [
    'sh',
    '-c',
    'pg_dump -U appuser -d appdb -Fc -f /tmp/appdb.dump && pg_restore --list /tmp/appdb.dump',
  ]);
  assert.equal(dump.code, 0, dump.stderr);
  assert.match(dump.stdout, /TABLE public items appuser/);
  assert.match(dump.stdout, /TABLE DATA public items appuser/);
});

test('mariadb image: env vars, volume at /var/lib/mysql, remote password auth, healthcheck.sh, mariadb-dump', async (t) => {
  const images = await needDbImages(t);
  if (!images) return;
  const image = images.mariadb;
  const { network, volume, name } = await setup('mariadb');
  const env = [
    `MARIADB_ROOT_PASSWORD=root-${PASSWORD}`,
    'MARIADB_USER=appuser',
    `MARIADB_PASSWORD=${PASSWORD}`,
    'MARIADB_DATABASE=appdb',
  ];
  const spec = { image, network, volume, path: '/var/lib/mysql' };
  // Over TCP: the initialisation server has networking off, so an answer here is the real server.
  const ready = (id: string) =>
    poll(
      'mariadb to accept connections',
      async () => {
        const r = await exec(
          id,
          ['mariadb-admin', '--protocol=tcp', '-h', '127.0.0.1', '-u', 'appuser', 'ping'],
          [`MYSQL_PWD=${PASSWORD}`],
        );
        return r.code === 0 && r.stdout.includes('mysqld is alive');
      },
      READY_MS,
      500,
    );
  const sql = (q: string, user = 'appuser', password = PASSWORD) =>
    client(
      image,
      network,
      ['mariadb', '-h', 'db', '-u', user, '--batch', '--skip-column-names', 'appdb', '-e', q],
      [`MYSQL_PWD=${password}`],
    );

  let id = await startServer({ ...spec, name, env });
  await ready(id);
  await assertUnprivileged(id);
  const hc = await exec(id, ['healthcheck.sh', '--connect', '--innodb_initialized']);
  assert.equal(hc.code, 0, hc.stderr);

  const w = await sql(
    "CREATE TABLE items (id INT PRIMARY KEY, label TEXT) ENGINE=InnoDB; INSERT INTO items VALUES (1, 'one'), (2, 'two');",
  );
  assert.equal(w.code, 0, w.stderr);
  const root = await sql('SELECT CURRENT_USER()', 'root', `root-${PASSWORD}`);
  assert.equal(root.code, 0, root.stderr);
  assert.equal(root.stdout.trim(), 'root@%');

  const bad = await sql('SELECT 1', 'appuser', 'wrong-password');
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /Access denied for user 'appuser'/);
  const badRoot = await sql('SELECT 1', 'root', '');
  assert.notEqual(badRoot.code, 0, 'root without a password must not log in');
  // The user's grants cover its own database only.
  const other = await sql('CREATE DATABASE other');
  assert.notEqual(other.code, 0);

  await docker.getContainer(id).restart();
  await ready(id);
  let r = await sql('SELECT label FROM items ORDER BY id');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'one\ntwo');

  await removeContainer(id);
  id = await startServer({
    ...spec,
    name,
    env: [
      'MARIADB_ROOT_PASSWORD=another',
      'MARIADB_USER=appuser',
      'MARIADB_PASSWORD=another',
      'MARIADB_DATABASE=appdb',
    ],
  });
  await ready(id);
  r = await sql('SELECT COUNT(*) FROM items');
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout.trim(), '2');
  const check = await sql('CHECK TABLE items');
  assert.match(check.stdout, /appdb\.items\s+check\s+status\s+OK/);

  const dump = await exec(
    id,
    ['mariadb-dump', '-u', 'appuser', '--single-transaction', 'appdb'],
    [`MYSQL_PWD=${PASSWORD}`],
  );
  assert.equal(dump.code, 0, dump.stderr);
  assert.match(dump.stdout, /CREATE TABLE `items`/);
  assert.match(dump.stdout, /INSERT INTO `items` VALUES\s*\(1,'one'\),\s*\(2,'two'\)/);
});

test('redis image: --requirepass as the command, /data volume, redis-cli --rdb', async (t) => {
  const images = await needDbImages(t);
  if (!images) return;
  const image = images.redis;
  const { network, volume, name } = await setup('redis');
  const spec = { image, network, volume, path: '/data' };
  const cli = (args: string[], password?: string) =>
    client(
      image,
      network,
      ['redis-cli', '-h', 'db', ...args],
      password === undefined ? [] : [`REDISCLI_AUTH=${password}`],
    );
  const ready = (id: string) =>
    poll(
      'redis to answer',
      async () => {
        const r = await exec(id, ['redis-cli', 'ping'], [`REDISCLI_AUTH=${PASSWORD}`]);
        return r.code === 0 && r.stdout.trim() === 'PONG';
      },
      READY_MS,
      500,
    );

  // The official image's form: the server and its options as the command.
  let id = await startServer({ ...spec, name, cmd: ['redis-server', '--requirepass', PASSWORD] });
  await ready(id);
  await assertUnprivileged(id);

  let r = await cli(['SET', 'greeting', 'hello'], PASSWORD);
  assert.equal(r.stdout.trim(), 'OK', r.stderr);
  // redis-cli exits 0 on a server error reply; the reply says whether it was refused.
  r = await cli(['GET', 'greeting']);
  assert.match(r.stdout + r.stderr, /NOAUTH/);
  r = await cli(['GET', 'greeting'], 'wrong-password');
  assert.match(r.stdout + r.stderr, /WRONGPASS/);
  assert.doesNotMatch(r.stdout, /hello/);

  // docker restart sends SIGTERM: the server saves its snapshot to /data on the way down.
  await docker.getContainer(id).restart();
  await ready(id);
  r = await cli(['GET', 'greeting'], PASSWORD);
  assert.equal(r.stdout.trim(), 'hello', r.stderr);

  // The other official form: options only, the server implied. Same volume, the key is there.
  await removeContainer(id);
  id = await startServer({ ...spec, name, cmd: ['--requirepass', PASSWORD, '--appendonly', 'no'] });
  await ready(id);
  r = await cli(['GET', 'greeting'], PASSWORD);
  assert.equal(r.stdout.trim(), 'hello', r.stderr);
  r = await cli(['CONFIG', 'GET', 'dir'], PASSWORD);
  assert.equal(r.stdout.trim(), 'dir\n/data');

  const rdb = await exec(
    id,
    ['sh', '-c', 'redis-cli --rdb /tmp/dump.rdb >/dev/null && head -c 5 /tmp/dump.rdb'],
    [`REDISCLI_AUTH=${PASSWORD}`],
  );
  assert.equal(rdb.code, 0, rdb.stderr);
  assert.equal(rdb.stdout, 'REDIS');
});

test('the image map names one image per engine, each present in the engine', async (t) => {
  const images: DbImages | null = await needDbImages(t);
  if (!images) return;
  assert.deepEqual(Object.keys(images).sort(), ['mariadb', 'postgres', 'redis']);
  for (const ref of Object.values(images)) {
    const info = await docker.getImage(ref).inspect();
    assert.ok(info.Config.Labels?.['svc.test.content-hash'], `${ref} carries its content hash`);
  }
});
