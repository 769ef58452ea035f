// `svc install` and `svc uninstall` run as the compiled CLI in a child process, under `--root` (a temp
// dir), as a packager would: every file, mode and unit line, idempotence, dry run, uninstall, purge.
//
// Not run here: a live install on a booted systemd. This machine is a Firecracker VM whose init is
// process_api, not systemd (no /run/systemd/system), and systemd-nspawn is not installed. A container
// with systemd as PID 1 does boot under this engine (--cap-add SYS_ADMIN, --cgroupns=host, the cgroup
// v1 tree bound in; --privileged is refused: the engine's own bounding set lacks CAP_SYS_RESOURCE),
// and the unit below, its ExecStart swapped for a probe, started there with /etc read-only and the
// data directory writable. A live-install test needs an image with systemd, Node, this tree and
// Caddy built from packages; not done yet. The live branch differs only in running `systemctl` and
// `sysctl` argument arrays instead of writing the symlinks (tests/unit/install/plan.test.ts checks those
// plans), and `systemd-analyze verify` below checks the unit against the real systemd parser.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import {
  copyFile,
  lstat,
  mkdir,
  mkdtemp,
  readFile,
  readdir,
  readlink,
  rm,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CLI, runCli } from '../../_support/cli.js';
import { missing } from '../../_support/ci.js';
import { SERVE_NODE_OPTIONS } from '#lib/install/texts.js';

const roots: string[] = [];
after(async () => {
  for (const r of roots) await rm(r, { recursive: true, force: true });
});

const DEBIAN_12 =
  'PRETTY_NAME="Debian GNU/Linux 12 (bookworm)"\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\nID=debian\n';

async function freshRoot(os = DEBIAN_12): Promise<string> {
  const r = await mkdtemp(join(tmpdir(), 'svc-install-'));
  roots.push(r);
  await mkdir(join(r, 'etc'), { recursive: true });
  await writeFile(join(r, 'etc/os-release'), os);
  return r;
}

const svc = (args: string[]) => runCli(args, {});

interface Entry {
  type: 'file' | 'dir' | 'symlink';
  mode: string;
  uid: number;
  mtimeMs: number;
  content: string;
}

/** Everything under a root: type, mode, owner, mtime and content, by relative path. */
async function snapshot(root: string, rel = ''): Promise<Record<string, Entry>> {
  const out: Record<string, Entry> = {};
  for (const name of (await readdir(join(root, rel))).sort()) {
    const p = rel ? `${rel}/${name}` : name;
    const st = await lstat(join(root, p));
    const type = st.isSymbolicLink() ? 'symlink' : st.isDirectory() ? 'dir' : 'file';
    const content =
      type === 'symlink'
        ? await readlink(join(root, p))
        : type === 'file'
          ? await readFile(join(root, p), 'utf8')
          : '';
    out[p] = { type, mode: (st.mode & 0o7777).toString(8), uid: st.uid, mtimeMs: st.mtimeMs, content };
    if (type === 'dir') Object.assign(out, await snapshot(root, p));
  }
  return out;
}

const shape = (s: Record<string, Entry>) =>
  Object.fromEntries(
    Object.entries(s).map(([p, e]) => [
      p,
      `${e.type} ${e.mode}${e.type === 'symlink' ? ` -> ${e.content}` : ''}`,
    ]),
  );

const EXPECTED_DROPIN_LINES = [
  '[Service]',
  'RuntimeDirectory=caddy',
  'RuntimeDirectoryMode=0700',
  'StandardInput=data',
  'StandardInputText={"admin":{"listen":"unix//run/caddy/admin.sock"}}',
  'ExecStart=',
  'ExecStart=/usr/bin/caddy run --environ --resume --config /dev/stdin',
];

const DROPIN = 'etc/systemd/system/caddy-api.service.d/svc-admin-socket.conf';
const VENDOR_CADDY_API = '/lib/systemd/system/caddy-api.service';

/**
 * Debian's caddy-api.service with a drop-in, through `systemd-analyze verify`: SYSTEMD_UNIT_PATH puts a
 * temp folder (the vendor unit copied in, the drop-in beside it) first in the search path, the only way
 * systemd reads a drop-in for a unit outside /etc and /lib.
 */
async function verifyCaddyApi(dropIn: string): Promise<{ code: number; problems: string[] }> {
  const dir = await mkdtemp(join(tmpdir(), 'svc-unitpath-'));
  roots.push(dir);
  await mkdir(join(dir, 'caddy-api.service.d'));
  await copyFile(VENDOR_CADDY_API, join(dir, 'caddy-api.service'));
  await writeFile(join(dir, 'caddy-api.service.d/svc-admin-socket.conf'), dropIn);
  return verifyUnit(join(dir, 'caddy-api.service'), { ...process.env, SYSTEMD_UNIT_PATH: `${dir}:` });
}

const EXPECTED_UNIT_LINES = [
  '[Unit]',
  'Description=svc control plane',
  'After=network-online.target docker.service caddy-api.service',
  'Wants=network-online.target docker.service caddy-api.service',
  '[Service]',
  'Type=simple',
  'EnvironmentFile=/etc/svc/svc.env',
  `ExecStart=${process.execPath} ${SERVE_NODE_OPTIONS.join(' ')} ${CLI} serve`,
  'Restart=on-failure',
  'RestartSec=2s',
  'RestartPreventExitStatus=2',
  'TimeoutStopSec=60s',
  'UMask=0077',
  'NoNewPrivileges=yes',
  'ProtectSystem=strict',
  'ReadWritePaths=/var/lib/svc',
  'PrivateTmp=yes',
  'ProtectHome=yes',
  'PrivateDevices=yes',
  'ProtectKernelTunables=yes',
  'ProtectKernelModules=yes',
  'ProtectKernelLogs=yes',
  'ProtectControlGroups=yes',
  'ProtectClock=yes',
  'ProtectHostname=yes',
  'RestrictSUIDSGID=yes',
  'RestrictRealtime=yes',
  'RestrictNamespaces=yes',
  'LockPersonality=yes',
  'SystemCallArchitectures=native',
  'RestrictAddressFamilies=AF_UNIX AF_INET AF_INET6 AF_NETLINK',
  'CapabilityBoundingSet=CAP_CHOWN CAP_DAC_OVERRIDE CAP_DAC_READ_SEARCH CAP_FOWNER CAP_KILL CAP_NET_BIND_SERVICE',
  '[Install]',
  'WantedBy=multi-user.target',
];

/**
 * `systemd-analyze verify` on the unit file by path, against this host's unit search path.
 * `--root=<dir>` does not work for a root holding only what install wrote: systemd then looks for
 * sysinit.target and the ExecStart binary inside that root and fails on their absence, whatever the
 * unit says. The exit status alone is not enough: a bad value or an unknown key is only a warning
 * ("..., ignoring") with status 0, and would weaken the sandbox silently. So any line about the
 * unit counts as a problem.
 */
function verifyUnit(
  path: string,
  env: NodeJS.ProcessEnv = process.env,
): Promise<{ code: number; problems: string[] }> {
  return new Promise((done) => {
    execFile(
      'systemd-analyze',
      ['verify', '--man=no', path],
      { timeout: 60_000, env },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : 1) : 0;
        const name = path.split('/').pop()!;
        const problems = `${stdout}\n${stderr}`
          .split('\n')
          .filter((l) => l.includes(name) || (code !== 0 && l.trim() !== ''));
        done({ code, problems });
      },
    );
  });
}

async function haveSystemdAnalyze(): Promise<boolean> {
  return new Promise((done) => execFile('systemd-analyze', ['--version'], (err) => done(!err)));
}

test('install --root writes every file with its mode, a unit systemd accepts, and the setup pointer', async (t) => {
  const root = await freshRoot();
  const r = await svc([
    'install',
    '--root',
    root,
    '--base-domain',
    'example.com',
    '--acme-email',
    'ops@example.com',
  ]);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const snap = await snapshot(root);
  assert.deepEqual(shape(snap), {
    etc: 'dir 755',
    'etc/os-release': 'file 644',
    'etc/svc': 'dir 700',
    'etc/svc/install.json': 'file 600',
    'etc/svc/svc.env': 'file 600',
    'etc/sysctl.d': 'dir 755',
    'etc/sysctl.d/60-svc.conf': 'file 644',
    'etc/systemd': 'dir 755',
    'etc/systemd/system': 'dir 755',
    'etc/systemd/system/caddy-api.service.d': 'dir 755',
    [DROPIN]: 'file 644',
    'etc/systemd/system/multi-user.target.wants': 'dir 755',
    'etc/systemd/system/multi-user.target.wants/caddy-api.service':
      'symlink 777 -> /lib/systemd/system/caddy-api.service',
    'etc/systemd/system/multi-user.target.wants/svc.service':
      'symlink 777 -> /etc/systemd/system/svc.service',
    'etc/systemd/system/svc.service': 'file 644',
    var: 'dir 755',
    'var/lib': 'dir 755',
    'var/lib/svc': 'dir 700',
  });
  if ((process.getuid?.() ?? 1) === 0)
    for (const [p, e] of Object.entries(snap)) assert.equal(e.uid, 0, `${p} belongs to root`);

  const env = snap['etc/svc/svc.env']!.content;
  const values = Object.fromEntries(
    env
      .split('\n')
      .filter((l) => /^[A-Z_]+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  assert.deepEqual(Object.keys(values), [
    'SVC_DATA_DIR',
    'SVC_MASTER_KEY',
    'SVC_METRICS_TOKEN',
    'SVC_CADDY_ADMIN',
    'SVC_BASE_DOMAIN',
    'SVC_HOST',
    'SVC_EXPOSURE',
    'SVC_ACME_EMAIL',
  ]);
  assert.match(values.SVC_MASTER_KEY!, /^[0-9a-f]{64}$/);
  assert.match(values.SVC_METRICS_TOKEN!, /^[0-9a-f]{48}$/);
  assert.equal(values.SVC_DATA_DIR, '/var/lib/svc');
  assert.equal(values.SVC_BASE_DOMAIN, 'example.com');
  assert.equal(values.SVC_ACME_EMAIL, 'ops@example.com');
  assert.equal(values.SVC_HOST, '127.0.0.1');
  assert.equal(
    values.SVC_CADDY_ADMIN,
    'unix//run/caddy/admin.sock',
    "Caddy's admin endpoint on the drop-in's socket",
  );
  for (const secret of [values.SVC_MASTER_KEY!, values.SVC_METRICS_TOKEN!])
    assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), 'no secret is printed');

  const unit = snap['etc/systemd/system/svc.service']!.content;
  assert.deepEqual(
    unit.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#')),
    EXPECTED_UNIT_LINES,
  );
  assert.match(unit, /# It runs as root, on purpose\./);
  assert.equal(
    snap['etc/sysctl.d/60-svc.conf']!.content.split('\n')
      .filter((l) => l && !l.startsWith('#'))
      .join('\n'),
    '-net.ipv4.tcp_migrate_req = 1',
  );
  const dropIn = snap[DROPIN]!.content;
  assert.deepEqual(
    dropIn.split('\n').filter((l) => l.trim() !== '' && !l.startsWith('#')),
    EXPECTED_DROPIN_LINES,
  );
  assert.deepEqual(JSON.parse(snap['etc/svc/install.json']!.content), {
    enabled: ['caddy-api.service', 'svc.service'],
    disabled: [],
  });
  assert.match(r.stdout, /\/var\/lib\/svc\/setup\.token/);
  assert.match(r.stdout, /https:\/\/svc\.example\.com\/#token=<that token>/);

  if (!(await haveSystemdAnalyze())) {
    missing(t, 'systemd-analyze is not installed (Debian package systemd)');
    return;
  }
  const good = await verifyUnit(join(root, 'etc/systemd/system/svc.service'));
  assert.deepEqual(good, { code: 0, problems: [] });
  // The check has teeth: a mistyped key, a bad value and a missing binary are each caught.
  const broken = join(root, 'broken');
  await mkdir(broken);
  for (const [from, to] of [
    ['NoNewPrivileges=yes', 'NoNewPrivilege=yes'],
    ['ProtectSystem=strict', 'ProtectSystem=strictly'],
    [`ExecStart=${process.execPath}`, 'ExecStart=/nonexistent/node'],
  ] as const) {
    await writeFile(join(broken, 'svc.service'), unit.replace(from, to));
    const v = await verifyUnit(join(broken, 'svc.service'));
    assert.ok(v.problems.length > 0, `${to} passed systemd-analyze verify`);
  }

  // The drop-in on Debian's caddy-api unit: accepted as a whole, and each mistake it could hold is caught.
  try {
    await lstat(VENDOR_CADDY_API);
  } catch {
    missing(t, `no ${VENDOR_CADDY_API} (Debian package caddy)`);
    return;
  }
  assert.deepEqual(await verifyCaddyApi(dropIn), { code: 0, problems: [] });
  for (const [from, to] of [
    ['StandardInputText=', 'StandardInputTxt='],
    ['RuntimeDirectoryMode=0700', 'RuntimeDirectoryMode=0799'],
    ['ExecStart=\n', ''],
  ] as const) {
    const v = await verifyCaddyApi(dropIn.replace(from, to));
    assert.ok(
      v.problems.length > 0,
      `the drop-in with ${JSON.stringify(to)} for ${JSON.stringify(from)} passed systemd-analyze verify`,
    );
  }
});

test('a second install changes nothing and says so; a dry run writes nothing and shows every change', async () => {
  const root = await freshRoot();
  const first = await svc(['install', '--root', root, '--base-domain', 'example.com']);
  assert.equal(first.code, 0, first.stderr);
  const before = await snapshot(root);
  const second = await svc(['install', '--root', root, '--base-domain', 'other.example']);
  assert.equal(second.code, 0, second.stderr);
  assert.match(second.stdout, /Nothing to change/);
  assert.doesNotMatch(second.stdout, /^\s+(create|update|link|chmod|remove|run) /m);
  assert.deepEqual(await snapshot(root), before, 'no file, mode or mtime changed');
  assert.match(second.stdout, /SVC_BASE_DOMAIN is already set in \/etc\/svc\/svc\.env: kept/);

  const dry = await freshRoot();
  const untouched = await snapshot(dry);
  const d = await svc(['install', '--dry-run', '--root', dry, '--base-domain', 'example.com']);
  assert.equal(d.code, 0, d.stderr);
  assert.deepEqual(await snapshot(dry), untouched, 'the dry run wrote nothing');
  assert.match(d.stdout, /dry run: nothing was changed/);
  for (const line of [
    'create /etc/svc/ (directory, 0700, root)',
    'create /var/lib/svc/ (directory, 0700, root)',
    'create /etc/svc/svc.env (0600, root)',
    'create /etc/systemd/system/svc.service (0644, root)',
    'create /etc/sysctl.d/60-svc.conf (0644, root)',
    'link /etc/systemd/system/multi-user.target.wants/caddy-api.service -> /lib/systemd/system/caddy-api.service',
    'create /etc/systemd/system/caddy-api.service.d/ (directory, 0755, root)',
    'create /etc/systemd/system/caddy-api.service.d/svc-admin-socket.conf (0644, root)',
  ]) {
    assert.ok(d.stdout.includes(line), `dry run lists: ${line}\n${d.stdout}`);
  }
  assert.match(d.stdout, /\| SVC_MASTER_KEY=<secret>/);
  assert.match(d.stdout, /\| ProtectSystem=strict/);
  assert.match(d.stdout, /\| RuntimeDirectoryMode=0700/);
  assert.doesNotMatch(d.stdout, /SVC_MASTER_KEY=[0-9a-f]{64}/);
});

test('an existing environment file keeps every value and byte; only missing keys are added', async () => {
  const root = await freshRoot();
  const key = 'ab'.repeat(32);
  const mine = `# mine\nSVC_MASTER_KEY=${key}\nSVC_BASE_DOMAIN=mine.example\nSVC_PORT=9494\n`;
  await mkdir(join(root, 'etc/svc'), { recursive: true });
  await writeFile(join(root, 'etc/svc/svc.env'), mine, { mode: 0o644 });
  const r = await svc(['install', '--root', root, '--base-domain', 'theirs.example']);
  assert.equal(r.code, 0, r.stderr);
  const text = await readFile(join(root, 'etc/svc/svc.env'), 'utf8');
  assert.ok(text.startsWith(mine), text);
  assert.equal(text.match(/SVC_MASTER_KEY=/g)?.length, 1);
  assert.match(text, /^SVC_METRICS_TOKEN=[0-9a-f]{48}$/m);
  assert.doesNotMatch(text, /theirs\.example/);
  assert.match(r.stdout, /SVC_BASE_DOMAIN is already set/);
  assert.equal((await lstat(join(root, 'etc/svc/svc.env'))).mode & 0o777, 0o600, 'mode corrected to 0600');
  const again = await svc(['install', '--root', root]);
  assert.match(again.stdout, /Nothing to change/);
  assert.equal(await readFile(join(root, 'etc/svc/svc.env'), 'utf8'), text);
});

test("an environment file with Caddy's admin endpoint on TCP keeps it, and gets no drop-in that would move Caddy away", async () => {
  const root = await freshRoot();
  await mkdir(join(root, 'etc/svc'), { recursive: true });
  await writeFile(join(root, 'etc/svc/svc.env'), 'SVC_CADDY_ADMIN=http://127.0.0.1:2019\n', { mode: 0o600 });
  const r = await svc(['install', '--root', root]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(
    await readFile(join(root, 'etc/svc/svc.env'), 'utf8'),
    /^SVC_CADDY_ADMIN=http:\/\/127\.0\.0\.1:2019$/m,
  );
  await assert.rejects(lstat(join(root, 'etc/systemd/system/caddy-api.service.d')), { code: 'ENOENT' });
  assert.match(r.stdout, /SVC_CADDY_ADMIN is http:\/\/127\.0\.0\.1:2019, not a unix socket.*svc doctor/);

  // Moved to the socket by hand, the next install adds the drop-in for it.
  await writeFile(join(root, 'etc/svc/svc.env'), 'SVC_CADDY_ADMIN=unix//run/caddy/admin.sock\n', {
    mode: 0o600,
  });
  assert.equal((await svc(['install', '--root', root])).code, 0);
  assert.match(await readFile(join(root, DROPIN), 'utf8'), /^RuntimeDirectory=caddy$/m);
});

test('the Caddyfile service is turned off by install and back on by uninstall; data stays unless --purge', async () => {
  const root = await freshRoot();
  const wants = join(root, 'etc/systemd/system/multi-user.target.wants');
  await mkdir(wants, { recursive: true });
  const { symlink } = await import('node:fs/promises');
  await symlink('/lib/systemd/system/caddy.service', join(wants, 'caddy.service'));
  const before = shape(await snapshot(root));

  assert.equal((await svc(['install', '--root', root])).code, 0);
  await assert.rejects(lstat(join(wants, 'caddy.service')), { code: 'ENOENT' });
  await writeFile(join(root, 'var/lib/svc/svc.db'), 'data', { mode: 0o600 });

  const dry = await svc(['uninstall', '--dry-run', '--root', root]);
  assert.match(dry.stdout, /remove \/etc\/systemd\/system\/svc\.service/);
  assert.ok(
    (await lstat(join(root, 'etc/systemd/system/svc.service'))).isFile(),
    'the dry run removed nothing',
  );

  const u = await svc(['uninstall', '--root', root]);
  assert.equal(u.code, 0, u.stderr);
  const after = shape(await snapshot(root));
  assert.deepEqual(after, {
    ...before,
    'etc/svc': 'dir 700',
    'etc/svc/svc.env': 'file 600',
    'etc/sysctl.d': 'dir 755',
    var: 'dir 755',
    'var/lib': 'dir 755',
    'var/lib/svc': 'dir 700',
    'var/lib/svc/svc.db': 'file 600',
  });
  assert.match(u.stdout, /Kept \/etc\/svc\/svc\.env/);
  assert.match((await svc(['uninstall', '--root', root])).stdout, /Nothing to change/);

  const p = await svc(['uninstall', '--purge', '--root', root]);
  assert.equal(p.code, 0, p.stderr);
  await assert.rejects(lstat(join(root, 'var/lib/svc')), { code: 'ENOENT' });
  await assert.rejects(lstat(join(root, 'etc/svc')), { code: 'ENOENT' });
  assert.ok((await lstat(join(wants, 'caddy.service'))).isSymbolicLink());
});

test('bad input is refused before anything is written', async () => {
  const root = await freshRoot();
  const untouched = await snapshot(root);
  const bad = await svc(['install', '--root', root, '--base-domain', 'not a domain']);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /--base-domain/);
  const mail = await svc(['install', '--root', root, '--acme-email', 'nobody']);
  assert.equal(mail.code, 2);
  assert.match(mail.stderr, /--acme-email/);
  const flag = await svc(['install', '--root', root, '--frobnicate']);
  assert.equal(flag.code, 2);
  assert.deepEqual(await snapshot(root), untouched);

  // Under --root another system is only noted (packaging for it is the packager's call).
  const other = await freshRoot('PRETTY_NAME="Fedora Linux 40"\nID=fedora\nVERSION_ID=40\n');
  const f = await svc(['install', '--root', other]);
  assert.equal(f.code, 0, f.stderr);
  assert.match(f.stdout, /Fedora Linux 40 is not supported.*not checked under --root/);
});
