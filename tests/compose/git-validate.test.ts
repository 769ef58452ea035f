import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRepoUrl, checkRef } from '../../lib/git/index.js';
import { repoUrlSchema, refSchema } from '../../lib/git/schemas.js';

test('repository URLs: the allowed transports', () => {
  for (const url of [
    'https://github.example/org/repo.git',
    'http://127.0.0.1:3000/me/app.git',
    'ssh://git@git.example:2222/org/repo.git',
    'git://localhost:9418/repo',
    'git@github.example:org/repo.git',
    'deploy@10.0.0.5:srv/repo',
    'https://user@host.example/~me/repo',
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
