// The host agent against the real tools: nftables, iptables and ufw each inside a throwaway
// network namespace (nothing touches the host's own rules, which Docker and other tests use)
// and a private mount namespace whose /etc/ufw is a copy this test controls (so the host's own
// ufw, enabled or not, changes nothing here), and a private fail2ban server that bans a
// TEST-NET address itself from a log this test writes.
import { test, before, after, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { access, appendFile, cp, mkdir, readdir, readFile, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fail2banState, firewallState, readHostSnapshot, parseHostSnapshot } from '#lib/security/snapshot.js';
import { evaluatePosture } from '#lib/security/posture.js';
import { need, needRoot, run, tempDir, waitFor } from './_helpers.js';

const AGENT = fileURLToPath(new URL('../../../runtime/security-agent.js', import.meta.url));
const UFW_HELPER = fileURLToPath(new URL('./_ufw-netns.js', import.meta.url));
const tag = `svcsec${process.pid}`;
const namespaces: string[] = [];
let dir = '';
let cleanupDir: (() => Promise<void>) | undefined;
let f2b: ChildProcess | undefined;
const NO_F2B = () => join(dir, 'no-fail2ban.sock');

before(async () => {
  ({ dir, cleanup: cleanupDir } = await tempDir('agent'));
});

after(async () => {
  for (const ns of namespaces) await run('ip', ['netns', 'del', ns]).catch(() => {});
  if (f2b && f2b.exitCode === null) {
    await run('fail2ban-client', ['-s', join(dir, 'f2b', 'f2b.sock'), 'stop'], { timeout: 30_000 }).catch(
      () => {},
    );
    const exited = new Promise((r) => f2b?.once('exit', r));
    await Promise.race([exited, new Promise((r) => setTimeout(r, 10_000))]);
    if (f2b.exitCode === null) f2b.kill('SIGKILL');
  }
  await cleanupDir?.();
});

async function netns(name: string): Promise<string> {
  const ns = `${tag}-${name}`;
  await run('ip', ['netns', 'add', ns]);
  namespaces.push(ns);
  return ns;
}

const hostHasUfw = () =>
  access('/etc/ufw').then(
    () => true,
    () => false,
  );

/** A private copy of /etc/ufw with ufw switched off (or as the host has it, for `enable`). */
async function ufwCopy(name: string, off: boolean): Promise<string> {
  const etc = join(dir, `etc-ufw-${name}`);
  await cp('/etc/ufw', etc, { recursive: true });
  if (off) {
    const conf = join(etc, 'ufw.conf');
    const text = await readFile(conf, 'utf8').catch(() => '');
    await writeFile(
      conf,
      /^ENABLED=/m.test(text) ? text.replace(/^ENABLED=.*$/m, 'ENABLED=no') : `ENABLED=no\n${text}`,
    );
  }
  return etc;
}

/**
 * Runs the agent in the namespace, and in a mount namespace where ufw is off (when installed).
 * False when a tool is missing (the test was skipped, or failed under CI).
 */
async function agentIn(t: TestContext, ns: string, out: string): Promise<boolean> {
  if (!(await hostHasUfw())) {
    await run(
      'ip',
      ['netns', 'exec', ns, process.execPath, AGENT, '--out', out, '--fail2ban-socket', NO_F2B()],
      { timeout: 60_000 },
    );
    return true;
  }
  if (!(await need(t, 'unshare', ['--version']))) return false;
  const etc = await ufwCopy(ns, true);
  await mkdir(out, { recursive: true });
  await run(
    'ip',
    [
      'netns',
      'exec',
      ns,
      'unshare',
      '--mount',
      '--propagation',
      'private',
      '--',
      process.execPath,
      UFW_HELPER,
      etc,
      AGENT,
      out,
      NO_F2B(),
      'as-is',
    ],
    { timeout: 60_000 },
  );
  return true;
}

test('nftables: an input chain with rules is reported active, with its rules', async (t) => {
  if (!needRoot(t) || !(await need(t, 'nft', ['--version'])) || !(await need(t, 'ip', ['-V']))) return;
  const ns = await netns('nft');
  const rules = join(dir, 'rules.nft');
  await writeFile(
    rules,
    [
      'table inet svc_test {',
      '  set blocked { type ipv4_addr; elements = { 192.0.2.66, 192.0.2.67 } }',
      '  chain input {',
      '    type filter hook input priority 0; policy accept;',
      '    tcp dport 65000 drop',
      '    ip saddr @blocked counter drop',
      '  }',
      '  chain output { type filter hook output priority 0; policy accept; tcp dport 65001 drop; }',
      '}',
      '',
    ].join('\n'),
  );
  await run('ip', ['netns', 'exec', ns, 'nft', '-f', rules]);
  const out = join(dir, 'nft-out');
  if (!(await agentIn(t, ns, out))) return;

  const st = await stat(join(out, 'host-snapshot.json'));
  assert.equal(st.mode & 0o777, 0o644);
  assert.equal((await stat(out)).mode & 0o777, 0o755);
  const snap = await readHostSnapshot(out);
  const fw = firewallState(snap, { agentEnabled: true });
  assert.ok(fw.available);
  assert.equal(fw.backend, 'nftables');
  assert.equal(fw.active, true);
  assert.equal(fw.stale, false);
  assert.ok(fw.rules.includes('inet svc_test input: tcp dport 65000 drop'), JSON.stringify(fw.rules));
  assert.ok(fw.rules.some((r) => r.startsWith('inet svc_test input: ip saddr @blocked')));
  assert.ok(fw.rules.includes('inet svc_test output: tcp dport 65001 drop'));
  const f2 = fail2banState(snap, { agentEnabled: true });
  assert.ok(f2.available);
  assert.deepEqual(f2.jails, []);

  const rows = evaluatePosture(baseInput({ snapshot: snap })).items;
  assert.equal(rows[0].code, 'firewall');
  assert.equal(rows[0].status, 'ok', rows[0].reason);
  assert.equal(rows[1].code, 'fail2ban');
  assert.equal(rows[1].status, 'warning', 'fail2ban installed but not running here');
});

test('iptables: an INPUT DROP policy is reported active under the iptables backend', async (t) => {
  if (!needRoot(t) || !(await need(t, 'iptables', ['--version'])) || !(await need(t, 'ip', ['-V']))) return;
  const ns = await netns('ipt');
  await run('ip', ['netns', 'exec', ns, 'iptables', '-P', 'INPUT', 'DROP']);
  await run('ip', [
    'netns',
    'exec',
    ns,
    'iptables',
    '-A',
    'INPUT',
    '-p',
    'tcp',
    '--dport',
    '22',
    '-j',
    'ACCEPT',
  ]);
  const out = join(dir, 'ipt-out');
  if (!(await agentIn(t, ns, out))) return;
  const fw = firewallState(await readHostSnapshot(out), { agentEnabled: true });
  assert.ok(fw.available);
  assert.equal(fw.backend, 'iptables');
  assert.equal(fw.active, true);
  assert.ok(fw.rules.includes('-P INPUT DROP'));
  assert.ok(fw.rules.includes('-A INPUT -p tcp -m tcp --dport 22 -j ACCEPT'), JSON.stringify(fw.rules));
});

test('no filtering at all: reported installed but inactive, and the posture row is an error', async (t) => {
  if (!needRoot(t) || !(await need(t, 'ip', ['-V']))) return;
  const ns = await netns('none');
  const out = join(dir, 'none-out');
  if (!(await agentIn(t, ns, out))) return;
  const snap = await readHostSnapshot(out);
  const fw = firewallState(snap, { agentEnabled: true });
  assert.ok(fw.available);
  assert.equal(fw.active, false);
  assert.notEqual(fw.backend, null);
  const row = evaluatePosture(baseInput({ snapshot: snap })).items[0];
  assert.equal(row.status, 'error');
  assert.match(row.reason, /installed but inactive/);
});

test('ufw: enabled inside a private namespace, reported active with its rules', async (t) => {
  if (
    !needRoot(t) ||
    !(await need(t, 'ufw', ['version'])) ||
    !(await need(t, 'ip', ['-V'])) ||
    !(await need(t, 'unshare', ['--version']))
  )
    return;
  const ns = await netns('ufw');
  const hostUfw = await snapshotDir('/etc/ufw');
  const etc = await ufwCopy('ufw', true);
  const out = join(dir, 'ufw-out');
  await mkdir(out, { recursive: true });
  await run(
    'ip',
    [
      'netns',
      'exec',
      ns,
      'unshare',
      '--mount',
      '--propagation',
      'private',
      '--',
      process.execPath,
      UFW_HELPER,
      etc,
      AGENT,
      out,
      NO_F2B(),
      'enable',
    ],
    { timeout: 120_000 },
  );
  const fw = firewallState(await readHostSnapshot(out), { agentEnabled: true });
  assert.ok(fw.available);
  assert.equal(fw.backend, 'ufw');
  assert.equal(fw.active, true);
  assert.match(fw.rules[0], /^Default: deny \(incoming\)/);
  assert.ok(
    fw.rules.some((r) => /^22\/tcp\s+ALLOW IN\s+Anywhere$/.test(r)),
    JSON.stringify(fw.rules),
  );
  assert.ok(
    fw.rules.some((r) => /^Anywhere\s+DENY IN\s+192\.0\.2\.0\/24$/.test(r)),
    JSON.stringify(fw.rules),
  );
  // Enabled in the private copy only: the host's own ufw configuration is byte for byte as it was.
  assert.match(await readFile(join(etc, 'ufw.conf'), 'utf8'), /^ENABLED=yes/m);
  assert.deepEqual(await snapshotDir('/etc/ufw'), hostUfw);
});

test('fail2ban: a private server bans a test address itself; the agent reports the jail', async (t) => {
  if (!(await need(t, 'fail2ban-client', ['--version']))) return;
  const f = join(dir, 'f2b');
  await mkdir(join(f, 'conf', 'filter.d'), { recursive: true });
  await mkdir(join(f, 'conf', 'action.d'), { recursive: true });
  const sock = join(f, 'f2b.sock');
  const log = join(f, 'auth.log');
  await writeFile(log, '');
  await writeFile(
    join(f, 'conf', 'fail2ban.conf'),
    [
      '[Definition]',
      'loglevel = INFO',
      `logtarget = ${join(f, 'fail2ban.log')}`,
      `socket = ${sock}`,
      `pidfile = ${join(f, 'f2b.pid')}`,
      'dbfile = :memory:',
      '',
    ].join('\n'),
  );
  await writeFile(
    join(f, 'conf', 'jail.conf'),
    [
      '[DEFAULT]',
      'backend = polling',
      '',
      '[svc-test]',
      'enabled = true',
      'filter = svc-test',
      `logpath = ${log}`,
      'maxretry = 2',
      'findtime = 600',
      'bantime = 3600',
      'action = svc-noop',
      '',
    ].join('\n'),
  );
  await writeFile(
    join(f, 'conf', 'filter.d', 'svc-test.conf'),
    ['[Definition]', 'failregex = ^svc-test auth failure from <HOST>$', 'datepattern = {NONE}', ''].join(
      '\n',
    ),
  );
  // Bans are recorded by fail2ban but the action does nothing: no host rule is ever changed.
  await writeFile(
    join(f, 'conf', 'action.d', 'svc-noop.conf'),
    [
      '[Definition]',
      'actionstart =',
      'actionstop =',
      'actioncheck =',
      'actionban =',
      'actionunban =',
      '',
    ].join('\n'),
  );
  f2b = spawn(
    'fail2ban-client',
    ['-c', join(f, 'conf'), '-s', sock, '-p', join(f, 'f2b.pid'), '-x', '-f', 'start'],
    { stdio: 'ignore' },
  );
  await waitFor(
    async () => (await run('fail2ban-client', ['-s', sock, 'ping'])).stdout.includes('pong'),
    'fail2ban server',
    60_000,
  );
  await appendFile(
    log,
    'svc-test auth failure from 192.0.2.7\n'.repeat(3) + 'svc-test auth failure from 198.51.100.9\n',
  );
  await waitFor(
    async () =>
      /Banned IP list:\s*192\.0\.2\.7/.test(
        (await run('fail2ban-client', ['-s', sock, 'status', 'svc-test'])).stdout,
      ),
    'fail2ban ban',
    60_000,
  );

  const out = join(dir, 'f2b-out');
  await run(process.execPath, [AGENT, '--out', out, '--fail2ban-socket', sock], { timeout: 60_000 });
  const snap = await readHostSnapshot(out);
  const state = fail2banState(snap, { agentEnabled: true });
  assert.ok(state.available);
  assert.equal(state.stale, false);
  assert.deepEqual(state.jails, [
    { name: 'svc-test', currently_banned: 1, total_banned: 1, banned_ips: ['192.0.2.7'] },
  ]);
  const row = evaluatePosture(baseInput({ snapshot: snap })).items[1];
  assert.equal(row.status, 'ok');
  assert.match(row.reason, /1 jail \(1 address banned now\)/);

  // Environment variable form of the socket option, as the timer would pass it.
  const out2 = join(dir, 'f2b-out-env');
  await run(process.execPath, [AGENT, '--out', out2], { env: { ...process.env, SVC_FAIL2BAN_SOCKET: sock } });
  const again = parseHostSnapshot(await readFile(join(out2, 'host-snapshot.json')));
  assert.equal(again.ok && again.fail2ban.ok && again.fail2ban.value.jails[0].currently_banned, 1);
});

/** Every file under a directory with its content, to show it was left as it was. */
async function snapshotDir(root: string): Promise<Record<string, string>> {
  const out: Record<string, string> = {};
  for (const e of await readdir(root, { recursive: true, withFileTypes: true })) {
    if (!e.isFile()) continue;
    const p = join(e.parentPath, e.name);
    out[p] = (await readFile(p)).toString('base64');
  }
  return out;
}

function baseInput(
  over: Partial<Parameters<typeof evaluatePosture>[0]> = {},
): Parameters<typeof evaluatePosture>[0] {
  return {
    masterKeySet: true,
    metricsTokenSet: true,
    exposure: 'public',
    baseDomain: 'example.test',
    agentEnabled: true,
    optedOut: false,
    snapshot: null,
    tailer: null,
    monitorEnabled: true,
    hostPorts: [],
    ...over,
  };
}
