import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRepoUrl, checkRef, redactUrl, redactUrls } from '../../lib/git/index.js';
import { repoUrlSchema, refSchema } from '../../lib/git/schemas.js';

test('repository URLs: the allowed transports', () => {
  for (const url of [
    'https://github.example/org/repo.git',
    'http://127.0.0.1:3000/me/app.git',
    'ssh://git@git.example:2222/org/repo.git',
    'git://localhost:9418/repo',
    'git@github.example:org/repo.git',
    'deploy@10.0.0.5:srv/repo',
    'ssh://deploy.bot@[::1]:22/srv/repo.git',
    'https://[2001:db8::1]/org/repo.git',
  ]) assert.deepEqual(checkRepoUrl(url), { ok: true }, url);
});

test('repository URLs: everything else is refused with a reason', () => {
  for (const url of [
    '', 'file:///etc', 'FILE:///x', 'ext::sh -c touch% /tmp/pwned', 'ext::x', 'fd::3', '/srv/repo', './repo', '../repo',
    '-uhttps://x/y', '--upload-pack=touch /tmp/x', 'https://x/$(id)', 'https://x/`id`', 'https://x/a;id', 'https://x/a|b',
    'https://x/a&b', 'https://x/a>b', 'https://x/a<b', 'https://x/a(b)', 'https://x/a b', 'https://x/a\nb', 'https://x/a\tb',
    'https://x/\u0000', 'ftp://x/y', 'rsync://x/y', 'svn+ssh://x/y', 'host:path', 'https://', 'https://host', 'git@-oProxyCommand=x:y',
  ]) {
    const r = checkRepoUrl(url);
    assert.equal(r.ok, false, JSON.stringify(url));
    if (!r.ok) assert.ok(r.reason.length > 5);
  }
});

test('refs per the contract', () => {
  for (const ref of ['main', 'release/1.2', 'v1.0.0', 'feature_x-y', 'a'.repeat(255)]) assert.deepEqual(checkRef(ref), { ok: true }, ref);
  for (const ref of ['', '--upload-pack=x', '-x', 'main;id', 'a..b', 'main\n', 'ma in', '/main', 'a'.repeat(256), 'x$(id)', 'main~1', 'a^', 'a:b', 'a/', 'a.lock', '.hidden', 'a//b']) {
    assert.equal(checkRef(ref).ok, false, JSON.stringify(ref));
  }
});

test('zod schemas carry the reason as the issue message', () => {
  const r = refSchema.safeParse('a..b');
  assert.equal(r.success, false);
  assert.match(r.error!.issues[0].message, /\.\./);
  assert.equal(repoUrlSchema.safeParse('https://x/y').success, true);
  assert.match(repoUrlSchema.safeParse('file:///x').error!.issues[0].message, /file/);
});

test('credentials in a repository URL are refused; an ssh user (no secret) is not', () => {
  for (const url of [
    'https://ghp_0123456789abcdefABCDEF@github.example/org/repo.git',
    'https://user:pass@host.example/repo.git',
    'https://user@host.example/~me/repo',
    'http://x-token:glpat-abc@10.0.0.1:3000/me/app.git',
    'https://%74oken@host.example/repo.git',
    'https://:secret@host.example/repo.git',
    'git://user@host.example/repo',
    'ssh://git:hunter2@git.example/org/repo.git',
  ]) {
    const r = checkRepoUrl(url);
    assert.equal(r.ok, false, url);
    if (!r.ok) {
      assert.match(r.reason, /credentials/, url);
      assert.ok(!r.reason.includes('pass') && !r.reason.includes('ghp_') && !r.reason.includes('hunter2'), 'the reason never repeats the secret');
    }
  }
  // scp-like URLs have no place for a password: "name:secret@host:path" would read as host "name".
  assert.equal(checkRepoUrl('name:secret@host.example:org/repo.git').ok, false);
  for (const url of ['git@github.example:org/repo.git', 'ssh://git@git.example/org/repo.git', 'ssh://git@git.example:2222/org/repo.git']) {
    assert.deepEqual(checkRepoUrl(url), { ok: true }, url);
  }
});

test('ssh hosts and users are checked after percent-decoding, as git decodes them', () => {
  for (const url of [
    'ssh://%2DoProxyCommand=touch%20%2Ftmp%2Fpwned/repo.git',
    'ssh://%2doProxyCommand=x/repo.git',
    'ssh://git@%2DoProxyCommand=x/repo.git',
    'ssh://%2D%2Dhelp@host.example/repo.git',
    'ssh://git@ho%73t.example/repo.git',
    'git://%2Dx/repo',
    'ssh://git@host%00.example/repo.git',
  ]) assert.equal(checkRepoUrl(url).ok, false, url);
});

test('URLs stored before credentials were refused are redacted in messages', () => {
  assert.equal(redactUrl('https://tok:secret@host.example/r.git'), 'https://***@host.example/r.git');
  assert.equal(redactUrl('https://host.example/r.git'), 'https://host.example/r.git');
  assert.equal(redactUrl('git@host.example:r.git'), 'git@host.example:r.git');
  assert.equal(redactUrl('https://ghp_token@host.example/r.git'), 'https://***@host.example/r.git');
  assert.equal(redactUrl('ssh://git@host.example/r.git'), 'ssh://git@host.example/r.git', 'an ssh user is no secret');
  assert.equal(redactUrl('ssh://git:pw@host.example/r.git'), 'ssh://git:***@host.example/r.git');
  assert.equal(redactUrls("fatal: unable to access 'https://ghp_abc@github.example/o/r.git/': 403"), "fatal: unable to access 'https://***@github.example/o/r.git/': 403");
});
