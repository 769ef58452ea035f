// `POST /api/instance/prune` is unscoped: on the shared engine it would remove other tests'
// objects. So this test starts its own dockerd (own data root, exec root, pidfile and socket under
// a temporary directory, no bridge, no iptables), points a control plane at that socket, leaves
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
import { startTestServer, adminClient, type TestServer } from '../_support/server.js';
import { LABEL_APP } from '../../lib/docker/names.js';

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
const docker = (sock: string, args: string[], timeout = 120_000) => run('docker', ['-H', `unix://${sock}`, ...args], { timeout, maxBuffer: 16 * 1024 * 1024 });

/** A tiny root fs (busybox plus a marker file), imported as `ref` with optional LABEL/CMD changes. */
async function importImage(sock: string, ref: string, marker: string, changes: string[] = []): Promise<string> {
  const root = await mkdtemp(join(dir, 'rootfs-'));
  try {
    await mkdir(join(root, 'bin'));
    await copyFile('/usr/bin/busybox', join(root, 'bin', 'busybox'));
    for (const name of ['sh', 'sleep', 'true']) await symlink('busybox', join(root, 'bin', name));
    await writeFile(join(root, 'marker'), marker);
    const c = ['ENV PATH=/bin', ...changes].flatMap((x) => ['-c', x]);
    await run('sh', ['-c', 'root=$1 sock=$2 ref=$3; shift 3; tar -C "$root" -c . | docker -H "unix://$sock" import "$@" - "$ref"', 'sh', root, sock, ref, ...c], { timeout: 120_000 });
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

test('prune on a private dockerd removes dangling images and stopped containers no app owns, and keeps what is in use or owned by an app', async (t) => {
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

  const tag = randomBytes(3).toString('hex');
  const base = await importImage(sock, `prune-base:${tag}`, 'base', ['CMD ["sleep", "3600"]']);
  // The same tag imported twice: the first image is left without a tag (dangling).
  const dangling = await importImage(sock, `prune-tmp:${tag}`, 'one');
  await importImage(sock, `prune-tmp:${tag}`, 'two');
  // An app's image left untagged (a kept rollback image): never pruned.
  const appDangling = await importImage(sock, `prune-app:${tag}`, 'app-one', [`LABEL ${LABEL_APP}=shop`]);
  await importImage(sock, `prune-app:${tag}`, 'app-two', [`LABEL ${LABEL_APP}=shop`]);
  const stopped = (await docker(sock, ['create', '--network', 'none', `prune-base:${tag}`, 'true'])).stdout.trim();
  const appStopped = (await docker(sock, ['create', '--network', 'none', '--label', `${LABEL_APP}=shop`, `prune-base:${tag}`, 'true'])).stdout.trim();
  const running = (await docker(sock, ['run', '-d', '--network', 'none', `prune-base:${tag}`])).stdout.trim();
  const volume = (await docker(sock, ['volume', 'create', '--label', `${LABEL_APP}=shop`, `shop_data_${tag}`])).stdout.trim();
  const looseVolume = (await docker(sock, ['volume', 'create', `loose_${tag}`])).stdout.trim();
  for (const id of [dangling, appDangling]) assert.ok(await exists(sock, 'image', id), 'the dangling images are there before the prune');
  const { stdout: danglingList } = await docker(sock, ['images', '-q', '--no-trunc', '--filter', 'dangling=true']);
  assert.ok(danglingList.includes(dangling) && danglingList.includes(appDangling), danglingList);

  server = await startTestServer({ SVC_DOCKER_SOCKET: sock });
  const c = await adminClient(server);
  const disk = await c.req('GET', '/api/instance/disk');
  assert.equal(disk.status, 200, disk.text);

  const r = await c.req('POST', '/api/instance/prune');
  assert.equal(r.status, 200, r.text);
  assert.equal(r.body.containers_deleted, 1, r.text);
  assert.equal(r.body.images_deleted >= 1, true, r.text);
  assert.equal(typeof r.body.reclaimed_bytes, 'number');

  assert.equal(await exists(sock, 'container', stopped), false, 'the stopped container no app owns is gone');
  assert.equal(await exists(sock, 'image', dangling), false, 'the dangling image is gone');
  assert.equal(await exists(sock, 'container', appStopped), true, "an app's stopped container stays");
  assert.equal(await exists(sock, 'container', running), true, 'the running container stays');
  assert.equal(await exists(sock, 'image', appDangling), true, "an app's untagged image stays");
  assert.equal(await exists(sock, 'image', base), true, 'an image in use stays');
  assert.equal(await exists(sock, 'volume', volume), true, 'volumes are never pruned');
  assert.equal(await exists(sock, 'volume', looseVolume), true, 'volumes are never pruned');
  const audit = await c.req('GET', '/api/audit?action=instance.pruned&limit=1');
  assert.equal(audit.body.items[0]?.outcome, 'ok');
  assert.equal(audit.body.items[0]?.status, 200);
  assert.equal(audit.body.items[0]?.action, 'POST /api/instance/prune');

  await docker(sock, ['rm', '-f', '--', running, appStopped]);
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
