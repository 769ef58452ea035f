// Deploy keys against a real OpenSSH server serving repositories through git-shell: the key is
// accepted, another key is refused, a changed host key is refused, and a clone works over ssh://.
//
// The server (tests/_support/sshd.ts) is private to this file's run: its own config, host keys
// and authorized_keys in a temp dir, on a free loopback port. Skips loudly where sshd cannot run
// at all, and fails instead under CI (CI=true) or SVC_REQUIRE_SSHD=1.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { access, mkdtemp, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateDeployKey } from '#lib/keys/ssh.js';
import { poll } from '../_support/wait.js';
import { needSshd, startSshd, makeBareRepo, sshdUsable, sshdRequired, type Sshd } from '../_support/sshd.js';
import {
  withDeployKey,
  testConnection,
  shallowClone,
  GitError,
  sshCommand,
  cleanMessage,
  explainFailure,
  sshHost,
} from '#lib/git/index.js';

let sshd: Sshd | undefined;
let work = '';
let head = '';
const appKey = generateDeployKey('svc-deploy@ssh-test');
const otherKey = generateDeployKey('svc-deploy@someone-else');

before(async () => {
  work = await mkdtemp(join(tmpdir(), 'svc-sshtest-'));
  if (await sshdUsable()) return; // each test skips (or fails under CI) by itself
  sshd = await startSshd();
  await sshd.authorize([appKey.publicKey]);
  head = await makeBareRepo(sshd, 'private-app', {
    'compose.yaml': 'services:\n  web:\n    image: svc-test/busybox:latest\n',
    'README.md': 'private\n',
  });
});

after(async () => {
  await sshd?.stop();
  if (work) await rm(work, { recursive: true, force: true });
});

const exists = (p: string) =>
  access(p).then(
    () => true,
    () => false,
  );

test('test-connection: the app key is accepted and the host key is recorded on first use', async (t) => {
  if (!(await needSshd(t))) return;
  const knownHosts = join(work, 'first', 'known_hosts');
  const r = await testConnection({
    url: sshd!.url('private-app'),
    privateKey: appKey.privateKey,
    knownHostsFile: knownHosts,
    timeoutMs: 20_000,
  });
  assert.equal(r.ok, true, `${r.message}\n--- sshd ---\n${sshd!.log().slice(-3000)}`);
  assert.match(r.message, /key is accepted \(1 branch, 0 tags\)/);
  const recorded = await readFile(knownHosts, 'utf8');
  assert.match(recorded, new RegExp(`^\\[127\\.0\\.0\\.1\\]:${sshd!.port} ssh-ed25519 AAAA`, 'm'));
  // Second use: same key on record, still fine, nothing added.
  const again = await testConnection({
    url: sshd!.url('private-app'),
    privateKey: appKey.privateKey,
    knownHostsFile: knownHosts,
    timeoutMs: 20_000,
  });
  assert.equal(again.ok, true, again.message);
  assert.equal(await readFile(knownHosts, 'utf8'), recorded);
});

test('test-connection: another key is refused with a clear message', async (t) => {
  if (!(await needSshd(t))) return;
  const r = await testConnection({
    url: sshd!.url('private-app'),
    privateKey: otherKey.privateKey,
    knownHostsFile: join(work, 'other', 'known_hosts'),
    timeoutMs: 20_000,
  });
  assert.equal(r.ok, false);
  assert.match(r.message, /^127\.0\.0\.1:\d+ refused the deploy key .*Permission denied \(publickey\)/);
  assert.ok(!/[\u0000-\u001f]/.test(r.message));
});

test('test-connection: a missing repository and a non-ssh URL answer clearly', async (t) => {
  if (!(await needSshd(t))) return;
  const missing = await testConnection({
    url: sshd!.url('nope'),
    privateKey: appKey.privateKey,
    knownHostsFile: join(work, 'missing', 'known_hosts'),
    timeoutMs: 20_000,
  });
  assert.equal(missing.ok, false);
  assert.match(missing.message, /does not appear to be a git repository/);
  const https = await testConnection({
    url: 'https://example.invalid/x.git',
    privateKey: appKey.privateKey,
    knownHostsFile: join(work, 'h', 'known_hosts'),
  });
  assert.deepEqual(https, {
    ok: false,
    message: 'deploy keys are used only with ssh:// or user@host:path repository URLs',
  });
  const bad = await testConnection({
    url: 'ssh://-oProxyCommand=id/x',
    privateKey: appKey.privateKey,
    knownHostsFile: join(work, 'h', 'known_hosts'),
  });
  assert.equal(bad.ok, false);
  assert.match(bad.message, /^repository URL: /);
});

test('shallow clone over ssh:// with the deploy key; the key file is gone afterwards', async (t) => {
  if (!(await needSshd(t))) return;
  const knownHosts = join(work, 'clone', 'known_hosts');
  let keyFile = '';
  const dir = join(work, 'checkout');
  const out = await withDeployKey(appKey.privateKey, knownHosts, async (env, paths) => {
    keyFile = paths.keyFile;
    assert.equal((await stat(paths.keyFile)).mode & 0o777, 0o600);
    assert.equal((await stat(paths.dir)).mode & 0o777, 0o700);
    assert.match(env.GIT_SSH_COMMAND!, /-o IdentitiesOnly=yes .*-o StrictHostKeyChecking=accept-new/);
    return shallowClone({ url: sshd!.url('private-app'), ref: 'main', dir, env, timeoutMs: 60_000 });
  });
  assert.equal(out.commit, head);
  assert.equal(out.subject, 'initial private-app');
  assert.match(await readFile(join(dir, 'compose.yaml'), 'utf8'), /services:/);
  assert.equal(await exists(keyFile), false, 'key file removed');
  assert.equal(await exists(join(keyFile, '..')), false, 'key dir removed');
});

test('the key file is removed when the work throws, too', async () => {
  let keyFile = '';
  await assert.rejects(
    withDeployKey(appKey.privateKey, join(work, 'throw', 'known_hosts'), async (_env, paths) => {
      keyFile = paths.keyFile;
      assert.equal(await exists(keyFile), true);
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.notEqual(keyFile, '');
  assert.equal(await exists(keyFile), false);
});

test('GIT_SSH_COMMAND takes only safe paths; a bad key or relative path is refused', async () => {
  assert.throws(() => sshCommand('/tmp/k', '/data/apps/x y/known_hosts'), GitError);
  assert.throws(() => sshCommand('/tmp/k', '/data/$(id)/known_hosts'), GitError);
  assert.throws(() => sshCommand('/tmp/k;id', '/data/known_hosts'), GitError);
  assert.throws(() => sshCommand('/tmp/k', '/data/%h/known_hosts'), GitError);
  assert.throws(() => sshCommand('/tmp/k', '/data/../etc/known_hosts'), GitError);
  await assert.rejects(
    withDeployKey(appKey.privateKey, '/data/a b/known_hosts', async () => 1),
    GitError,
  );
  await assert.rejects(
    withDeployKey(appKey.privateKey, 'relative/known_hosts', async () => 1),
    GitError,
  );
  await assert.rejects(
    withDeployKey('not a key', join(work, 'k', 'known_hosts'), async () => 1),
    GitError,
  );
});

test('server messages are cleaned of escapes and control characters, and bounded', () => {
  const hostile =
    'remote: \u001b[2J\u001b[31mhello\u001b[0m\u0007 \u001b]0;title\u0007there\r\nfatal: bad\u0000 thing\n' +
    'x'.repeat(2000);
  const m = cleanMessage(hostile);
  assert.ok(!/[\u0000-\u001f\u007f-\u009f]/.test(m), m);
  assert.ok(m.startsWith('remote: hello there; fatal: bad thing; xxx'), m);
  assert.ok(m.length <= 400);
  const changed = [
    '@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@@',
    '@    WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED!     @',
    'Host key for [git.example]:2222 has changed and you have requested strict checking.',
    'Host key verification failed.',
  ].join('\n');
  assert.match(
    explainFailure(changed, 'git.example:2222'),
    /^host key for git\.example:2222 changed .*refusing/,
  );
  assert.equal(sshHost('git@github.com:org/repo.git'), 'github.com');
  assert.equal(sshHost('ssh://git@[::1]:2222/x.git'), '[::1]:2222');
  assert.equal(sshHost('https://github.com/org/repo.git'), null);
});

test('a server that never answers is cut off at the timeout, ssh included', async (t) => {
  if (!(await needSshd(t))) return;
  const sockets: import('node:net').Socket[] = [];
  let closed = 0;
  const silent = createServer((s) => {
    sockets.push(s);
    s.on('close', () => {
      closed += 1;
    });
    s.on('error', () => {});
    s.resume();
  });
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
  const port = (silent.address() as { port: number }).port;
  try {
    const r = await testConnection({
      url: `ssh://git@127.0.0.1:${port}/x.git`,
      privateKey: appKey.privateKey,
      knownHostsFile: join(work, 'silent', 'known_hosts'),
      timeoutMs: 1500,
    });
    // Only the timeout path gives this answer (the server never says a word).
    assert.deepEqual(r, { ok: false, message: `no answer from 127.0.0.1:${port} within 2 s` });
    assert.ok(sockets.length > 0, 'ssh did connect');
    // The killed process group leaves no ssh behind holding the connection: every connection
    // it opened gets closed from its side (waited for, not timed: a loaded machine is slow).
    await poll(
      'every ssh connection to be closed by the client',
      () => closed === sockets.length,
      30_000,
      50,
    );
  } finally {
    for (const s of sockets) s.destroy();
    await new Promise((r) => silent.close(r));
  }
});

// Last: it restarts the server with new host keys.
test('a changed host key is refused with a clear message, and nothing is cloned', async (t) => {
  if (!(await needSshd(t))) return;
  const knownHosts = join(work, 'rotate', 'known_hosts');
  const first = await testConnection({
    url: sshd!.url('private-app'),
    privateKey: appKey.privateKey,
    knownHostsFile: knownHosts,
    timeoutMs: 20_000,
  });
  assert.equal(first.ok, true, first.message);
  const before = await readFile(knownHosts, 'utf8');
  await sshd!.rotateHostKey();
  const r = await testConnection({
    url: sshd!.url('private-app'),
    privateKey: appKey.privateKey,
    knownHostsFile: knownHosts,
    timeoutMs: 20_000,
  });
  assert.equal(r.ok, false);
  assert.match(r.message, new RegExp(`^host key for 127\\.0\\.0\\.1:${sshd!.port} changed .*refusing`));
  assert.equal(await readFile(knownHosts, 'utf8'), before, 'the recorded key is not replaced');
  const dir = join(work, 'checkout-after-rotation');
  await assert.rejects(
    withDeployKey(appKey.privateKey, knownHosts, (env) =>
      shallowClone({ url: sshd!.url('private-app'), ref: 'main', dir, env, timeoutMs: 30_000 }),
    ),
    (e: unknown) =>
      e instanceof GitError &&
      /REMOTE HOST IDENTIFICATION HAS CHANGED|Host key verification failed/.test(e.message),
  );
  // A fresh known_hosts (what "reset known hosts" would give) accepts the new key.
  await writeFile(knownHosts, '');
  const fresh = await testConnection({
    url: sshd!.url('private-app'),
    privateKey: appKey.privateKey,
    knownHostsFile: knownHosts,
    timeoutMs: 20_000,
  });
  assert.equal(fresh.ok, true, fresh.message);
});

if (sshdRequired) test('CI requires sshd', async () => assert.equal(await sshdUsable(), null));
