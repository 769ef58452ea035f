// `POST /api/instance/prune` is unscoped: it empties the engine's build cache, and a prune that got
// ownership wrong would remove other tests' objects. So this test starts its own dockerd (own data
// root, exec root, pidfile and socket under a temporary directory, no bridge, no iptables), points a control plane at that socket, leaves
// dangling and in-use objects there, prunes over HTTP and checks what is gone and what stayed.
// The daemon is stopped and its directories removed at the end.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, mkdir, copyFile, symlink, rm, writeFile, access } from 'node:fs/promises';
import { constants } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { missing } from '../_support/ci.js';
import { poll } from '../_support/wait.js';
import { startTestServer, adminClient, ADMIN, type TestServer } from '../_support/server.js';
import { LABEL_APP, LABEL_MANAGED, LABEL_ROLE, LABEL_SERVICE } from '#lib/docker/names.js';
import { LABEL_INSTANCE } from '#lib/docker/owner.js';

const run = promisify(execFile);
const DOCKERD = '/usr/sbin/dockerd';
const UNSHARE = '/usr/bin/unshare';

let dir = '';
let daemon: ChildProcess | null = null;
let daemonExited: Promise<void> | null = null;
let daemonOutput = '';
let server: TestServer | null = null;

after(async () => {
  await server?.stop();
  if (daemon && daemon.exitCode === null) {
    daemon.kill('SIGTERM');
    const killed = setTimeout(() => daemon?.kill('SIGKILL'), 60_000);
    await daemonExited;
    clearTimeout(killed);
  }
  // The data root holds overlay mounts only while containers run; the daemon unmounted them on its way out.
  if (dir) await rm(dir, { recursive: true, force: true });
});

async function canRunDaemon(t: import('node:test').TestContext): Promise<boolean> {
  if (process.getuid?.() !== 0) return missing(t, 'a private dockerd needs root', 'SVC_REQUIRE_DOCKER');
  try {
    await access(DOCKERD, constants.X_OK);
  } catch {
    return missing(t, `${DOCKERD} is missing (apt-get install docker.io)`, 'SVC_REQUIRE_DOCKER');
  }
  try {
    await access(UNSHARE, constants.X_OK);
  } catch {
    return missing(t, `${UNSHARE} is missing (apt-get install util-linux)`, 'SVC_REQUIRE_DOCKER');
  }
  return true;
}

function ping(socketPath: string): Promise<boolean> {
  return new Promise((resolve) => {
    const req = request({ socketPath, path: '/_ping', timeout: 2000 }, (res) => {
      res.resume();
      resolve(res.statusCode === 200);
    });
    req.on('error', () => resolve(false));
    req.on('timeout', () => req.destroy());
    req.end();
  });
}

/** The docker CLI against the private daemon only. */
const docker = (sock: string, args: string[], timeout = 120_000) =>
  run('docker', ['-H', `unix://${sock}`, ...args], { timeout, maxBuffer: 16 * 1024 * 1024 });

/** A tiny root fs (busybox plus a marker file), imported as `ref` with optional LABEL/CMD changes. */
async function importImage(
  sock: string,
  ref: string,
  marker: string,
  changes: string[] = [],
): Promise<string> {
  const root = await mkdtemp(join(dir, 'rootfs-'));
  try {
    await mkdir(join(root, 'bin'));
    await copyFile('/usr/bin/busybox', join(root, 'bin', 'busybox'));
    for (const name of ['sh', 'sleep', 'true']) await symlink('busybox', join(root, 'bin', name));
    await writeFile(join(root, 'marker'), marker);
    const c = ['ENV PATH=/bin', ...changes].flatMap((x) => ['-c', x]);
    await run(
      'sh',
      [
        '-c',
        'root=$1 sock=$2 ref=$3; shift 3; tar -C "$root" -c . | docker -H "unix://$sock" import "$@" - "$ref"',
        'sh',
        root,
        sock,
        ref,
        ...c,
      ],
      { timeout: 120_000 },
    );
    const { stdout } = await docker(sock, ['image', 'inspect', '--format', '{{.Id}}', '--', ref]);
    return stdout.trim();
  } finally {
    await rm(root, { recursive: true, force: true });
  }
}

async function exists(sock: string, kind: 'image' | 'container' | 'volume', id: string): Promise<boolean> {
  try {
    await docker(sock, [kind, 'inspect', '--', id], 30_000);
    return true;
  } catch {
    return false;
  }
}

test("prune on a private dockerd needs a step-up, removes only this instance's leftovers, and never an object it did not make", async (t) => {
  if (!(await canRunDaemon(t))) return;
  dir = await mkdtemp(join(tmpdir(), 'svc-dockerd-'));
  const sock = join(dir, 'docker.sock');
  await writeFile(join(dir, 'daemon.json'), '{}');
  const hostBridges = await hostInterfaces();
  // Its own network namespace: with --bridge=none a dockerd deletes any `docker0` it can see,
  // which in the host's namespace would be the shared daemon's bridge. unshare execs dockerd, so
  // the child's pid is the daemon's.
  daemon = spawn(
    UNSHARE,
    [
      '--net',
      '--',
      DOCKERD,
      '--config-file',
      join(dir, 'daemon.json'),
      '--data-root',
      join(dir, 'data'),
      '--exec-root',
      join(dir, 'exec'),
      '--pidfile',
      join(dir, 'docker.pid'),
      '--host',
      `unix://${sock}`,
      '--bridge=none',
      '--iptables=false',
      '--ip6tables=false',
      '--ip-masq=false',
      '--cgroup-parent',
      `svc-prune-test-${process.pid}`,
      '--log-level',
      'warn',
    ],
    { stdio: ['ignore', 'pipe', 'pipe'] },
  );
  const keep = (b: Buffer) => {
    daemonOutput = (daemonOutput + b.toString()).slice(-64 * 1024);
  };
  daemon.stdout!.on('data', keep);
  daemon.stderr!.on('data', keep);
  daemonExited = new Promise((resolve) => daemon!.once('exit', () => resolve()));
  await poll(
    'the private dockerd answers',
    async () => {
      if (daemon!.exitCode !== null) throw new Error(`dockerd exited (${daemon!.exitCode}): ${daemonOutput}`);
      return (await ping(sock)) || null;
    },
    120_000,
    250,
  );

  server = await startTestServer({ SVC_DOCKER_SOCKET: sock });
  const c = await adminClient(server);
  // What this control plane's own objects carry; everything else here was made by someone else.
  const mine = [`${LABEL_MANAGED}=true`, `${LABEL_INSTANCE}=${server.env.engine.owner.instanceId}`];
  const own = (extra: string[] = []) => [...mine, ...extra].flatMap((l) => ['--label', l]);
  const tag = randomBytes(3).toString('hex');
  const base = await importImage(sock, `prune-base:${tag}`, 'base', ['CMD ["sleep", "3600"]']);
  const created = await c.req('POST', '/api/apps', {
    name: 'shop',
    source: { type: 'image', image: `prune-base:${tag}` },
  });
  assert.equal(created.status, 201, created.text);
  // The same tag imported twice leaves the first image dangling: one of nobody's, one of ours (no app),
  // one of the live app (a kept rollback image) and one of an app this database does not have.
  const dangling = await importImage(sock, `prune-tmp:${tag}`, 'one');
  await importImage(sock, `prune-tmp:${tag}`, 'two');
  const ourDangling = await importImage(
    sock,
    `prune-ours:${tag}`,
    'ours-one',
    mine.map((l) => `LABEL ${l}`),
  );
  await importImage(sock, `prune-ours:${tag}`, 'ours-two');
  const appDangling = await importImage(
    sock,
    `prune-app:${tag}`,
    'app-one',
    [...mine, `${LABEL_APP}=shop`].map((l) => `LABEL ${l}`),
  );
  await importImage(
    sock,
    `prune-app:${tag}`,
    'app-two',
    [...mine, `${LABEL_APP}=shop`].map((l) => `LABEL ${l}`),
  );
  const goneImage = await importImage(
    sock,
    `prune-gone:${tag}`,
    'gone',
    [...mine, `${LABEL_APP}=gone`].map((l) => `LABEL ${l}`),
  );
  const create = async (labels: string[]) =>
    (
      await docker(sock, ['create', '--network', 'none', ...labels, `prune-base:${tag}`, 'true'])
    ).stdout.trim();
  const exited = async (labels: string[]) => {
    const id = await create(labels);
    await docker(sock, ['start', '--attach', id]);
    return id;
  };
  // Not ours: a stopped container with no labels, and a look-alike carrying the app's labels without the instance id.
  const stopped = await exited([]);
  const lookalike = await exited([
    '--label',
    `${LABEL_MANAGED}=true`,
    '--label',
    `${LABEL_APP}=shop`,
    '--label',
    `${LABEL_SERVICE}=web`,
  ]);
  // Ours: a leftover health probe, and a stopped container of an app this database no longer has.
  const probe = await exited(own([`${LABEL_ROLE}=probe`]));
  const orphan = await exited(own([`${LABEL_APP}=gone`, `${LABEL_SERVICE}=web`]));
  // Ours and still needed: the stopped container of the live app.
  const appStopped = await exited(own([`${LABEL_APP}=shop`, `${LABEL_SERVICE}=web`]));
  const running = (await docker(sock, ['run', '-d', '--network', 'none', `prune-base:${tag}`])).stdout.trim();
  const volume = (
    await docker(sock, ['volume', 'create', ...own([`${LABEL_APP}=shop`]), `shop_data_${tag}`])
  ).stdout.trim();
  const looseVolume = (await docker(sock, ['volume', 'create', `loose_${tag}`])).stdout.trim();
  const { stdout: danglingList } = await docker(sock, [
    'images',
    '-q',
    '--no-trunc',
    '--filter',
    'dangling=true',
  ]);
  for (const id of [dangling, ourDangling, appDangling]) assert.ok(danglingList.includes(id), danglingList);

  const disk = await c.req('GET', '/api/instance/disk');
  assert.equal(disk.status, 200, disk.text);

  // A session that has not stepped up is refused, and nothing is removed.
  const refused = await c.req('POST', '/api/instance/prune');
  assert.equal(refused.status, 403, refused.text);
  assert.equal(refused.body.code, 'step_up_required');
  for (const id of [stopped, lookalike, probe, orphan])
    assert.equal(await exists(sock, 'container', id), true, 'a refused prune removes nothing');

  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const r = await c.req('POST', '/api/instance/prune');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.containers_deleted, 2, r.text);
  assert.equal(r.body.images_deleted, 2, r.text);
  assert.equal(typeof r.body.reclaimed_bytes, 'number');

  assert.equal(await exists(sock, 'container', probe), false, 'our leftover probe is gone');
  assert.equal(
    await exists(sock, 'container', orphan),
    false,
    'the stopped container of an app we no longer have is gone',
  );
  assert.equal(await exists(sock, 'image', ourDangling), false, 'our dangling image is gone');
  assert.equal(
    await exists(sock, 'image', goneImage),
    false,
    'the image of an app we no longer have is gone',
  );
  assert.equal(await exists(sock, 'container', stopped), true, 'a stopped container we did not make stays');
  assert.equal(
    await exists(sock, 'container', lookalike),
    true,
    "a container wearing the app's labels without our instance id stays",
  );
  assert.equal(await exists(sock, 'image', dangling), true, 'a dangling image we did not make stays');
  assert.equal(await exists(sock, 'container', appStopped), true, "a live app's stopped container stays");
  assert.equal(await exists(sock, 'container', running), true, 'the running container stays');
  assert.equal(await exists(sock, 'image', appDangling), true, "a live app's untagged image stays");
  assert.equal(await exists(sock, 'image', base), true, 'an image in use stays');
  assert.equal(await exists(sock, 'volume', volume), true, 'volumes are never pruned');
  assert.equal(await exists(sock, 'volume', looseVolume), true, 'volumes are never pruned');
  const audit = await c.req('GET', '/api/audit?action=instance.pruned&limit=1');
  assert.equal(audit.body.items[0]?.outcome, 'ok');
  assert.equal(audit.body.items[0]?.status, 200);
  assert.equal(audit.body.items[0]?.action, 'POST /api/instance/prune');

  await docker(sock, ['rm', '-f', '--', running, appStopped, stopped, lookalike]);
  assert.deepEqual(await hostInterfaces(), hostBridges, "the host's network interfaces are untouched");
});

/** Whether the host's docker0 (the shared engine's default bridge) is there: `['docker0']` or `[]`. */
async function hostInterfaces(): Promise<string[]> {
  const { stdout } = await run('ip', ['-o', 'link', 'show', 'type', 'bridge']);
  return stdout
    .split('\n')
    .map((l) => /^\d+: ([^:@]+)/.exec(l)?.[1])
    .filter((n): n is string => !!n)
    .filter((n) => n === 'docker0')
    .sort();
}
