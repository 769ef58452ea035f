// The caddy-api drop-in `svc install` writes, played with the real Debian Caddy: the drop-in's own
// ExecStart, standard input and runtime directory (re-rooted into a temp folder, since systemd does not
// run here and other tests may run Caddy at the same time), Caddy running as Debian's `caddy` user.
// The attack: any local user (or anything that fetches a loopback URL) reaching Caddy's admin endpoint
// reads the whole config, uploaded private keys included, or replaces it. With the drop-in, Caddy has
// no TCP admin listener at all, another user cannot open the socket, and the control plane (root)
// syncs through it, leaving the endpoint on the socket across the load and a restart that resumes.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { chmod, chown, mkdir, mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { parseEnvFile, loadConfig } from '#lib/config.js';
import { createCaddyClient } from '#lib/proxy/caddy.js';
import { checks, runChecks, type DoctorContext } from '#lib/doctor/checks.js';
import { request as httpRequest } from 'node:http';
import { runCli } from '../../_support/cli.js';
import { missing } from '../../_support/ci.js';
import { needEdge } from '../../_support/edge.js';
import { edgeEnv } from '../../_support/env.js';
import { freePort } from '../../_support/net.js';
import { poll } from '../../_support/wait.js';

const dirs: string[] = [];
const procs: Array<ReturnType<typeof spawn>> = [];
after(async () => {
  for (const p of procs) if (p.exitCode === null && p.signalCode === null) p.kill('SIGKILL');
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const DEBIAN_12 =
  'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n';

/** `Key=value` lines of a unit file's [Service] section, in order (repeated keys kept). */
function serviceLines(text: string): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  let section = '';
  for (const line of text.split('\n')) {
    if (/^\[.*\]$/.test(line)) section = line;
    else if (section === '[Service]' && /^[A-Za-z]+=/.test(line))
      out.push([line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]);
  }
  return out;
}

function caddyIds(): Promise<{ uid: number; gid: number } | null> {
  return new Promise((done) =>
    execFile('id', ['caddy'], (err, stdout) => {
      const m = /uid=(\d+).*gid=(\d+)/.exec(String(stdout));
      done(err || !m ? null : { uid: Number(m[1]), gid: Number(m[2]) });
    }),
  );
}

/** TCP ports a process listens on, from `ss` (root sees every process). */
function tcpPortsOf(pid: number): Promise<number[]> {
  return new Promise((done, fail) =>
    execFile('ss', ['-Hltnp'], (err, stdout) => {
      if (err) return fail(err);
      const ports = String(stdout)
        .split('\n')
        .filter((l) => l.includes(`pid=${pid},`))
        .map((l) => Number(l.trim().split(/\s+/)[3]!.split(':').pop()));
      done([...new Set(ports)].sort((a, b) => a - b));
    }),
  );
}

/** What happens when another (unprivileged) user opens the socket: "connected" or the error code. */
function connectAs(uid: number, gid: number, socket: string): Promise<string> {
  const script = `require('net').connect(${JSON.stringify(socket)}).on('connect',function(){console.log('connected');this.destroy()}).on('error',e=>console.log(e.code))`;
  return new Promise((done, fail) =>
    execFile(process.execPath, ['-e', script], { uid, gid, cwd: '/' }, (err, stdout) =>
      err ? fail(err) : done(String(stdout).trim()),
    ),
  );
}

test('the installed caddy-api drop-in keeps the admin endpoint off TCP and closed to other users; the control plane syncs through it', async (t) => {
  if (!(await needEdge(t))) return;
  if (userInfo().uid !== 0) return void missing(t, 'not root: Caddy cannot be started as the caddy user');
  const ids = await caddyIds();
  if (!ids) return void missing(t, 'no caddy user (Debian package caddy)');

  const root = await mkdtemp(join(tmpdir(), 'svc-admin-sock-'));
  dirs.push(root);
  await chmod(root, 0o755);
  await mkdir(join(root, 'etc'));
  await writeFile(join(root, 'etc/os-release'), DEBIAN_12);
  const r = await runCli(['install', '--root', root], {});
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const dropIn = await readFile(
    join(root, 'etc/systemd/system/caddy-api.service.d/svc-admin-socket.conf'),
    'utf8',
  );
  const env = parseEnvFile(await readFile(join(root, 'etc/svc/svc.env'), 'utf8'));
  const lines = serviceLines(dropIn);
  const value = (k: string) => lines.filter(([key]) => key === k).map(([, v]) => v);
  const [runtimeDir] = value('RuntimeDirectory');
  const [runtimeMode] = value('RuntimeDirectoryMode');
  const execStart = value('ExecStart')
    .filter((v) => v !== '')
    .at(-1)!;
  const stdinText = value('StandardInputText').join('\n') + '\n';
  assert.deepEqual(value('StandardInput'), ['data']);
  const listen = (JSON.parse(stdinText) as { admin: { listen: string } }).admin.listen;
  assert.equal(listen, env.SVC_CADDY_ADMIN, 'Caddy and the control plane name the same socket');
  assert.ok(
    listen.startsWith(`unix//run/${runtimeDir}/`),
    'the socket is in the runtime directory systemd creates',
  );

  // What systemd would do, under the temp root: the runtime directory with its mode, owned by User=caddy.
  const rerooted = (p: string) => join(root, p);
  const socket = rerooted(listen.slice('unix/'.length));
  const address = `unix/${socket}`;
  await mkdir(rerooted('/run'), { mode: 0o755 });
  await mkdir(rerooted(`/run/${runtimeDir}`), { mode: Number.parseInt(runtimeMode!, 8) });
  await chmod(rerooted(`/run/${runtimeDir}`), Number.parseInt(runtimeMode!, 8));
  await chown(rerooted(`/run/${runtimeDir}`), ids.uid, ids.gid);
  const home = join(root, 'caddy-home');
  const logs = join(root, 'logs');
  for (const d of [home, logs]) {
    await mkdir(d);
    await chown(d, ids.uid, ids.gid);
  }
  const [httpPort, httpsPort] = await Promise.all([freePort(), freePort()]);
  const [cmd, ...args] = execStart.split(' ');
  assert.equal(cmd, '/usr/bin/caddy');
  assert.ok(args.includes('--resume') && args.join(' ').endsWith('--config /dev/stdin'), execStart);

  // StandardInput=data: systemd hands the text over as a sealed memfd, an inode any user may read, which
  // Caddy (not root) reopens through /dev/stdin; a world-readable file is the same to it (a pipe made by
  // root would not be: Caddy's user could not reopen it).
  const stdinFile = join(root, 'caddy-stdin');
  await writeFile(stdinFile, stdinText.replace(listen, address), { mode: 0o644 });
  let out = '';
  const startCaddy = async () => {
    const stdin = await open(stdinFile, 'r');
    const child = spawn(cmd!, args, {
      uid: ids.uid,
      gid: ids.gid,
      cwd: home,
      env: {
        PATH: '/usr/bin:/bin',
        HOME: home,
        XDG_CONFIG_HOME: join(home, 'config'),
        XDG_DATA_HOME: join(home, 'data'),
      },
      stdio: [stdin.fd, 'pipe', 'pipe'],
    });
    await stdin.close();
    procs.push(child);
    child.stdout!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-64 * 1024)));
    child.stderr!.on('data', (c: Buffer) => (out = (out + c.toString()).slice(-64 * 1024)));
    const client = createCaddyClient(address);
    await poll(`Caddy's admin socket (${out.slice(-2000)})`, () => client.reachable(), 30_000, 100);
    return child;
  };
  let caddy = await startCaddy();
  const client = createCaddyClient(address);
  assert.deepEqual(await client.getConfig(), { admin: { listen: address } });
  assert.deepEqual(
    await tcpPortsOf(caddy.pid!),
    [],
    'no TCP listener at all: the admin endpoint is on the socket only',
  );
  // Another user cannot open the socket (its directory is Caddy's user's alone); root, as the control plane runs, can.
  assert.equal(await connectAs(65534, 65534, socket), 'EACCES');

  await edgeEnv(t, {
    SVC_DATA_DIR: join(root, 'data'),
    SVC_CADDY_ADMIN: address,
    SVC_PROXY_HTTP_PORT: String(httpPort),
    SVC_PROXY_HTTPS_PORT: String(httpsPort),
    SVC_ACCESS_LOG: join(logs, 'access.log'),
    SVC_PROXY: 'on',
  });
  type Cfg = { admin?: { listen?: string }; apps?: { http?: { servers?: Record<string, unknown> } } };
  const synced = async () => {
    const c = (await client.getConfig().catch(() => null)) as Cfg | null;
    return c?.apps?.http?.servers && Object.keys(c.apps.http.servers).length ? c : null;
  };
  assert.equal(
    (await poll("the control plane's config in Caddy", synced, 30_000, 100)).admin?.listen,
    address,
  );
  const ports = await tcpPortsOf(caddy.pid!);
  assert.ok(
    ports.length > 0 && ports.every((p) => p === httpPort || p === httpsPort),
    `after the load Caddy listens on ${ports.join(', ')}: the proxy's ports only`,
  );
  assert.equal(await connectAs(65534, 65534, socket), 'EACCES');

  // A restart resumes the autosaved config (the control plane's), with the endpoint still on the socket.
  caddy.kill('SIGTERM');
  await new Promise((done) => caddy.once('exit', done));
  caddy = await startCaddy();
  const resumed = await poll('the resumed config', synced, 30_000, 100);
  assert.equal(resumed.admin?.listen, address);
  const again = await tcpPortsOf(caddy.pid!);
  assert.ok(
    again.every((p) => p === httpPort || p === httpsPort),
    `after the restart Caddy listens on ${again.join(', ')}`,
  );
  caddy.kill('SIGTERM');
  await new Promise((done) => caddy.once('exit', done));
});

test("svc doctor's fix for an admin endpoint on TCP moves a running Caddy's endpoint onto the socket", async (t) => {
  if (!(await needEdge(t))) return;
  const dir = await mkdtemp(join(tmpdir(), 'svc-admin-move-'));
  dirs.push(dir);
  const adminPort = await freePort();
  const tcpAdmin = `http://127.0.0.1:${adminPort}`;
  const bootstrap = join(dir, 'caddy.json');
  await writeFile(bootstrap, JSON.stringify({ admin: { listen: `127.0.0.1:${adminPort}` } }));
  const child = spawn('/usr/bin/caddy', ['run', '--config', bootstrap], {
    env: {
      PATH: '/usr/bin:/bin',
      HOME: dir,
      XDG_CONFIG_HOME: join(dir, 'config'),
      XDG_DATA_HOME: join(dir, 'data'),
    },
    stdio: 'ignore',
  });
  procs.push(child);
  await poll('Caddy on TCP', () => createCaddyClient(tcpAdmin).reachable(), 30_000, 100);
  assert.deepEqual(await tcpPortsOf(child.pid!), [adminPort]);

  // The doctor's fix, with the socket in this test's folder instead of /run/caddy.
  const socket = join(dir, 'run', 'admin.sock');
  await mkdir(join(dir, 'run'), { mode: 0o700 });
  const [line] = await runChecks(
    {
      config: loadConfig({ SVC_DATA_DIR: dir, SVC_CADDY_ADMIN: tcpAdmin }),
      envFile: '/etc/svc/svc.env',
    } as DoctorContext,
    checks.filter((c) => c.name === 'caddy admin'),
  );
  assert.equal(line!.status, 'warning');
  const m =
    /curl -X PATCH -H 'content-type: application\/json' -d '"([^"]+)"' (http:\/\/\S+)\/config\/admin\/listen;/.exec(
      line!.fix ?? '',
    );
  assert.ok(m, line!.fix);
  assert.equal(m[2], tcpAdmin);
  const target = m[1]!.replace('unix//run/caddy/admin.sock', `unix/${socket}`);
  const status = await new Promise<number>((done, fail) => {
    const body = JSON.stringify(target);
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: adminPort,
        method: 'PATCH',
        path: '/config/admin/listen',
        headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
      },
      (res) => {
        res.resume();
        res.on('end', () => done(res.statusCode ?? 0));
      },
    );
    req.on('error', fail);
    req.end(body);
  });
  assert.equal(status, 200);
  const client = createCaddyClient(`unix/${socket}`);
  await poll('the admin endpoint on the socket', () => client.reachable(), 30_000, 100);
  assert.deepEqual(await client.getConfig(), { admin: { listen: `unix/${socket}` } });
  assert.deepEqual(await tcpPortsOf(child.pid!), [], 'nothing left on TCP');
  child.kill('SIGTERM');
  await new Promise((done) => child.once('exit', done));
});
