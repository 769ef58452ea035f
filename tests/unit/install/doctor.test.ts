// `svc doctor`'s checks: fakes for what this machine cannot show (a booted systemd, Caddy on 80/443,
// DNS of a real domain), the real engine socket, a real TLS listener and the real CLI.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:tls';
import { createServer as createNetServer } from 'node:net';
import { mkdtemp, rm, writeFile, mkdir, chmod } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { checks, runChecks, formatLine, type DoctorContext, type CheckLine } from '#lib/doctor/checks.js';
import { loadConfig } from '#lib/config.js';
import { parseOsRelease, type PathState } from '#lib/install/plan.js';
import { pathState } from '#lib/install/state.js';
import { pingEngine, tlsPeer } from '../../../runtime/install-cli.js';
import { DOCKER_SOCKET, needDocker } from '../../_support/docker.js';
import { makeCa, issue } from '../../_support/pki.js';
import { runCli } from '../../_support/cli.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const link: PathState = { type: 'symlink', mode: 0o777, uid: 0 };
const GiB = 1024 ** 3;

/** A healthy installed host, every probe faked; each test breaks one thing. */
function healthy(over: Partial<DoctorContext> = {}): DoctorContext {
  const config = loadConfig({
    SVC_DATA_DIR: '/var/lib/svc',
    SVC_MASTER_KEY: 'ab'.repeat(32),
    SVC_BASE_DOMAIN: 'example.com',
    SVC_HOST: '127.0.0.1',
    SVC_CADDY_ADMIN: 'unix//run/caddy/admin.sock',
  });
  return {
    config,
    envFile: '/etc/svc/svc.env',
    envFileState: { type: 'file', mode: 0o100600, uid: 0 },
    host: {
      live: true,
      os: parseOsRelease('ID=debian\nVERSION_ID=12\nPRETTY_NAME="Debian GNU/Linux 12 (bookworm)"'),
      paths: {
        '/etc/systemd/system/svc.service': { type: 'file', mode: 0o644, uid: 0 },
        '/etc/systemd/system/multi-user.target.wants/svc.service': link,
        '/etc/systemd/system/multi-user.target.wants/caddy-api.service': link,
        '/etc/sysctl.d/60-svc.conf': { type: 'file', mode: 0o644, uid: 0 },
        '/etc/systemd/system/caddy-api.service.d/svc-admin-socket.conf': {
          type: 'file',
          mode: 0o644,
          uid: 0,
        },
      },
      packages: new Set(['docker.io', 'caddy']),
      systemd: true,
      active: { 'svc.service': true, 'caddy-api.service': true, 'caddy.service': false },
      sysctl: { 'net.ipv4.tcp_migrate_req': '1' },
    },
    now: Date.parse('2030-01-01T00:00:00Z'),
    pingEngine: async () => ({ version: '24.0.7' }),
    caddyConfig: async () => ({ apps: { http: { servers: { s: { routes: [{ '@id': 'svc-control' }] } } } } }),
    health: async () => ({ status: 200, body: '{"status":"ok","db":"ok"}' }),
    listeners: async () => [
      { port: 80, address: '*', process: 'caddy' },
      { port: 443, address: '*', process: 'caddy' },
    ],
    dns: async (host) => ({
      host,
      expected: ['203.0.113.5'],
      resolved: ['203.0.113.5'],
      points_here: true,
      checked_at: '',
    }),
    tls: async () => ({
      cert: {
        checkHost: () => 'svc.example.com',
        validTo: 'Mar  1 00:00:00 2030 GMT',
        subject: 'CN=svc.example.com',
      } as never,
      authorized: true,
    }),
    diskSpace: async () => ({ free: 50 * GiB, total: 100 * GiB }),
    stat: async (p) => STAT[p] ?? null,
    code: async () => ({ checkout: '/opt/svc', problems: [] }),
    ...over,
  };
}

const STAT: Record<string, PathState> = {
  '/var/lib/svc': { type: 'dir', mode: 0o40700, uid: 0 },
  '/run/caddy': { type: 'dir', mode: 0o40700, uid: 999 },
  '/run/caddy/admin.sock': { type: 'file', mode: 0o140755, uid: 999 },
};

const byName = (lines: CheckLine[]) => Object.fromEntries(lines.map((l) => [l.name, l]));

test('a healthy host: every check ok, one line each in the documented shape', async () => {
  const lines = await runChecks(healthy());
  assert.deepEqual(
    lines.map((l) => l.name),
    checks.map((c) => c.name),
  );
  for (const l of lines) assert.equal(l.status, 'ok', formatLine(l));
  assert.match(formatLine(lines[0]!), /^ok {7}system {12}Debian GNU\/Linux 12 \(bookworm\)$/);
});

test('each broken thing is the error or warning of its own check, with a fix', async () => {
  const cases: Array<[string, Partial<DoctorContext>, 'error' | 'warning', RegExp]> = [
    [
      'engine',
      { pingEngine: async () => Promise.reject(new Error('ECONNREFUSED')) },
      'error',
      /does not answer.*ECONNREFUSED/,
    ],
    [
      'proxy',
      { caddyConfig: async () => Promise.reject(new Error('connect ECONNREFUSED 127.0.0.1:2019')) },
      'error',
      /admin API does not answer/,
    ],
    ['proxy', { caddyConfig: async () => null }, 'error', /not in sync/],
    [
      'proxy',
      { caddyConfig: async () => ({ routes: [{ '@id': 'svc-auto-x-web' }] }) },
      'error',
      /no route for the control domain/,
    ],
    [
      'service',
      { health: async () => ({ status: 503, body: '{"status":"error"}' }) },
      'error',
      /answers 503/,
    ],
    [
      'dns',
      {
        dns: async (host) => ({
          host,
          expected: ['203.0.113.5'],
          resolved: ['198.51.100.1'],
          points_here: false,
          checked_at: '',
        }),
      },
      'error',
      /198\.51\.100\.1, not this host \(203\.0\.113\.5\)/,
    ],
    ['certificate', { now: Date.parse('2030-02-20T00:00:00Z') }, 'warning', /\(9 days\)/],
    ['certificate', { now: Date.parse('2030-03-02T00:00:00Z') }, 'error', /expired/],
    [
      'certificate',
      { tls: async () => ({ cert: null, authorized: false, error: 'nothing listens on 443' }) },
      'error',
      /no certificate served.*nothing listens/,
    ],
    [
      'ports',
      { listeners: async () => [{ port: 80, address: '*', process: 'nginx' }] },
      'error',
      /80 is held by nginx.*nothing listens on 443/,
    ],
    [
      'environment file',
      { envFileState: { type: 'file', mode: 0o100644, uid: 0 } },
      'error',
      /0644: others can read the master key/,
    ],
    [
      'data directory',
      {
        stat: async (p) =>
          p === '/var/lib/svc' ? { type: 'dir', mode: 0o40755, uid: 0 } : (STAT[p] ?? null),
      },
      'error',
      /is 0755/,
    ],
    ['disk', { diskSpace: async () => ({ free: 0.5 * GiB, total: 100 * GiB }) }, 'error', /0\.5 GiB free/],
    ['disk', { diskSpace: async () => ({ free: 8 * GiB, total: 100 * GiB }) }, 'warning', /8\.0 GiB free/],
  ];
  for (const [name, over, status, detail] of cases) {
    const line = byName(await runChecks(healthy(over)))[name]!;
    assert.equal(line.status, status, formatLine(line));
    assert.match(line.detail, detail);
    assert.ok(status === 'warning' || line.fix, `${name} error has a fix`);
  }
  const noKey = healthy({ config: loadConfig({ SVC_DATA_DIR: '/var/lib/svc' }) });
  const lines = byName(await runChecks(noKey));
  assert.equal(lines['master key']!.status, 'error');
  assert.equal(lines.dns!.status, 'warning', 'no control domain: DNS has nothing to check');
  const host = healthy().host;
  const caddyOn = byName(
    await runChecks(healthy({ host: { ...host, active: { ...host.active, 'caddy.service': true } } })),
  );
  assert.equal(caddyOn['caddy-api']!.status, 'error');
  assert.match(caddyOn['caddy-api']!.fix!, /systemctl disable --now caddy\.service/);
  const throwing = byName(await runChecks(healthy({ listeners: () => Promise.reject(new Error('boom')) })));
  assert.equal(throwing.ports!.status, 'error', 'a check that throws is an error line, not a crash');
});

test('the engine check against the real engine socket, and a socket that is not there', async (t) => {
  if (!(await needDocker(t))) return;
  const v = await pingEngine(DOCKER_SOCKET);
  assert.match(v.version, /^\d+\.\d+/);
  const line = byName(
    await runChecks(healthy({ pingEngine, config: { ...healthy().config, dockerSocket: DOCKER_SOCKET } })),
  );
  assert.equal(line.engine!.status, 'ok', line.engine!.detail);
  const gone = byName(
    await runChecks(
      healthy({ pingEngine, config: { ...healthy().config, dockerSocket: '/nonexistent/docker.sock' } }),
    ),
  );
  assert.equal(gone.engine!.status, 'error');
  assert.match(gone.engine!.detail, /ENOENT/);
});

test('the certificate check over a real TLS handshake: trusted and near expiry, untrusted, wrong name', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-doctor-'));
  dirs.push(dir);
  const ca = await makeCa(dir);
  const leaf = await issue(ca, ['svc.example.com'], { days: 2 });
  const server = createServer({ cert: leaf.certPem, key: leaf.keyPem }, (s) => s.end());
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => server.close());
  const port = (server.address() as { port: number }).port;
  const config = loadConfig({
    SVC_DATA_DIR: '/var/lib/svc',
    SVC_BASE_DOMAIN: 'example.com',
    SVC_PROXY_HTTPS_PORT: String(port),
  });
  const cert = (tls: DoctorContext['tls']) =>
    runChecks(
      healthy({ config, tls, now: Date.now() }),
      checks.filter((c) => c.name === 'certificate'),
    );
  const [trusted] = await cert(tlsPeer(ca.certPath));
  assert.equal(trusted!.status, 'warning', formatLine(trusted!));
  assert.match(trusted!.detail, /svc\.example\.com: valid until .* \(1 days\)/);
  const [untrusted] = await cert(tlsPeer(null));
  assert.equal(untrusted!.status, 'error');
  assert.match(untrusted!.detail, /not trusted/);
  const other = loadConfig({
    SVC_DATA_DIR: '/var/lib/svc',
    SVC_BASE_DOMAIN: 'other.example',
    SVC_PROXY_HTTPS_PORT: String(port),
  });
  const [wrong] = await runChecks(
    healthy({ config: other, tls: tlsPeer(ca.certPath), now: Date.now() }),
    checks.filter((c) => c.name === 'certificate'),
  );
  assert.equal(wrong!.status, 'error');
  assert.match(wrong!.detail, /does not cover svc\.other\.example/);
});

test('svc doctor as a command: one line per check, exit status 1 on an error', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-doctor-cli-'));
  dirs.push(dir);
  const data = join(dir, 'data');
  await mkdir(data, { mode: 0o755 });
  await chmod(data, 0o755);
  const envFile = join(dir, 'svc.env');
  await writeFile(
    envFile,
    `SVC_DATA_DIR=${data}\nSVC_MASTER_KEY=${'cd'.repeat(32)}\nSVC_PORT=1\nSVC_CADDY_ADMIN=http://127.0.0.1:1\n`,
    { mode: 0o644 },
  );
  const r = await runCli(['doctor'], { SVC_ENV_FILE: envFile });
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const lines = r.stdout.trim().split('\n');
  assert.equal(lines.length, checks.length + 1, r.stdout);
  for (const l of lines.slice(0, -1)) assert.match(l, /^(ok|warning|error) +\S.*  \S/);
  assert.match(
    r.stdout,
    /^error +environment file +\S+svc\.env is 0644: others can read the master key \[fix: chmod 600 /m,
  );
  assert.match(r.stdout, /^error +data directory +\S+ is 0755/m);
  assert.match(
    r.stdout,
    /^error +service +http:\/\/0\.0\.0\.0:1|^error +service +http:\/\/127\.0\.0\.1:1\/api\/health does not answer/m,
  );
  assert.match(r.stdout, /^ok +master key +SVC_MASTER_KEY is set$/m);
  assert.doesNotMatch(r.stdout, /cdcdcdcd/, 'the key is never printed');
  assert.match(lines.at(-1)!, /^\d+ errors, \d+ warnings\.$/);
});

test('caddy admin: an endpoint on TCP, a TCP listener, a missing drop-in or socket are each a warning with the fix', async () => {
  const check = async (over: Partial<DoctorContext>) =>
    byName(
      await runChecks(
        healthy(over),
        checks.filter((c) => c.name === 'caddy admin'),
      ),
    )['caddy admin']!;
  assert.equal((await check({})).status, 'ok');
  const tcpConfig = loadConfig({ SVC_DATA_DIR: '/var/lib/svc', SVC_CADDY_ADMIN: 'http://127.0.0.1:2019' });
  const tcp = await check({ config: tcpConfig });
  assert.equal(tcp.status, 'warning', formatLine(tcp));
  assert.match(tcp.detail, /SVC_CADDY_ADMIN is http:\/\/127\.0\.0\.1:2019: Caddy's admin endpoint is on TCP/);
  assert.match(
    tcp.fix!,
    /SVC_CADDY_ADMIN=unix\/\/run\/caddy\/admin\.sock in \/etc\/svc\/svc\.env; svc install \(it adds the caddy-api drop-in\); /,
  );
  assert.match(
    tcp.fix!,
    /-d '"unix\/\/run\/caddy\/admin\.sock"' http:\/\/127\.0\.0\.1:2019\/config\/admin\/listen; systemctl restart svc\.service$/,
  );

  const listening = await check({
    listeners: async () => [
      { port: 80, address: '*', process: 'caddy' },
      { port: 443, address: '*', process: 'caddy' },
      { port: 2019, address: '127.0.0.1', process: 'caddy' },
    ],
  });
  assert.equal(listening.status, 'warning');
  assert.match(listening.detail, /127\.0\.0\.1:2019 listens on TCP/);
  assert.match(listening.fix!, /http:\/\/127\.0\.0\.1:2019\/config\/admin\/listen$/);

  const host = healthy().host;
  const noDropIn = await check({
    host: {
      ...host,
      paths: { ...host.paths, '/etc/systemd/system/caddy-api.service.d/svc-admin-socket.conf': null },
    },
  });
  assert.equal(noDropIn.status, 'warning');
  assert.match(noDropIn.detail, /no \/etc\/systemd\/system\/caddy-api\.service\.d\/svc-admin-socket\.conf/);
  assert.equal(noDropIn.fix, 'svc install');

  const gone = await check({ stat: async (p) => (p === '/run/caddy/admin.sock' ? null : (STAT[p] ?? null)) });
  assert.equal(gone.status, 'error');
  assert.match(gone.detail, /no socket at \/run\/caddy\/admin\.sock/);
});

test('caddy admin: a real socket whose folder and mode let other users in is a warning; 0700 is not', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'svc-doctor-sock-'));
  dirs.push(dir);
  const socketDir = join(dir, 'caddy');
  await mkdir(socketDir);
  const socket = join(socketDir, 'admin.sock');
  const server = createNetServer();
  await new Promise<void>((r) => server.listen(socket, r));
  after(() => server.close());
  const config = loadConfig({ SVC_DATA_DIR: '/var/lib/svc', SVC_CADDY_ADMIN: `unix/${socket}` });
  const check = async () =>
    byName(
      await runChecks(
        healthy({ config, stat: pathState }),
        checks.filter((c) => c.name === 'caddy admin'),
      ),
    )['caddy admin']!;
  await chmod(socketDir, 0o755);
  await chmod(socket, 0o777);
  const open = await check();
  assert.equal(open.status, 'warning', formatLine(open));
  assert.match(open.detail, /is 0755 and \S+admin\.sock 0777: its group and every user can open it/);
  assert.match(open.fix!, /^chmod 700 /);
  await chmod(socketDir, 0o750);
  assert.match((await check()).detail, /is 0750 and \S+ 0777: its group can open it/);
  await chmod(socketDir, 0o700);
  const closed = await check();
  assert.equal(closed.status, 'ok', formatLine(closed));
  assert.match(closed.detail, /socket 0777\), no admin endpoint on TCP/);
});
