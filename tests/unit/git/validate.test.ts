import { test } from 'node:test';
import assert from 'node:assert/strict';
import { checkRepoUrl, checkRef, redactUrl, redactUrls } from '#lib/git/index.js';
import { repoUrlSchema, refSchema } from '#lib/git/schemas.js';

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
  ])
    assert.deepEqual(checkRepoUrl(url), { ok: true }, url);
});

test('repository URLs: everything else is refused with a reason', () => {
  for (const url of [
    '',
    'file:///etc',
    'FILE:///x',
    'ext::sh -c touch% /tmp/pwned',
    'ext::x',
    'fd::3',
    '/srv/repo',
    './repo',
    '../repo',
    '-uhttps://x/y',
    '--upload-pack=touch /tmp/x',
    'https://x/$(id)',
    'https://x/`id`',
    'https://x/a;id',
    'https://x/a|b',
    'https://x/a&b',
    'https://x/a>b',
    'https://x/a<b',
    'https://x/a(b)',
    'https://x/a b',
    'https://x/a\nb',
    'https://x/a\tb',
    'https://x/\u0000',
    'ftp://x/y',
    'rsync://x/y',
    'svn+ssh://x/y',
    'host:path',
    'https://',
    'https://host',
    'git@-oProxyCommand=x:y',
  ]) {
    const r = checkRepoUrl(url);
    assert.equal(r.ok, false, JSON.stringify(url));
    if (!r.ok) assert.ok(r.reason.length > 5);
  }
});

test('refs per the contract', () => {
  for (const ref of ['main', 'release/1.2', 'v1.0.0', 'feature_x-y', 'a'.repeat(255)])
    assert.deepEqual(checkRef(ref), { ok: true }, ref);
  for (const ref of [
    '',
    '--upload-pack=x',
    '-x',
    'main;id',
    'a..b',
    'main\n',
    'ma in',
    '/main',
    'a'.repeat(256),
    'x$(id)',
    'main~1',
    'a^',
    'a:b',
    'a/',
    'a.lock',
    '.hidden',
    'a//b',
  ]) {
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
      assert.ok(
        !r.reason.includes('pass') && !r.reason.includes('ghp_') && !r.reason.includes('hunter2'),
        'the reason never repeats the secret',
      );
    }
  }
  // scp-like URLs have no place for a password: "name:secret@host:path" would read as host "name".
  assert.equal(checkRepoUrl('name:secret@host.example:org/repo.git').ok, false);
  for (const url of [
    'git@github.example:org/repo.git',
    'ssh://git@git.example/org/repo.git',
    'ssh://git@git.example:2222/org/repo.git',
  ]) {
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
  ])
    assert.equal(checkRepoUrl(url).ok, false, url);
});

test('URLs stored before credentials were refused are redacted in messages', () => {
  assert.equal(redactUrl('https://tok:secret@host.example/r.git'), 'https://***@host.example/r.git');
  assert.equal(redactUrl('https://host.example/r.git'), 'https://host.example/r.git');
  assert.equal(redactUrl('git@host.example:r.git'), 'git@host.example:r.git');
  assert.equal(redactUrl('https://ghp_token@host.example/r.git'), 'https://***@host.example/r.git');
  assert.equal(
    redactUrl('ssh://git@host.example/r.git'),
    'ssh://git@host.example/r.git',
    'an ssh user is no secret',
  );
  assert.equal(redactUrl('ssh://git:pw@host.example/r.git'), 'ssh://git:***@host.example/r.git');
  assert.equal(
    redactUrls("fatal: unable to access 'https://ghp_abc@github.example/o/r.git/': 403"),
    "fatal: unable to access 'https://***@github.example/o/r.git/': 403",
  );
});

// Each layer of the URL and ref checks answers for itself: the exact reason shows which check
// refused an input, so a check that stopped working is noticed even where a later one would
// still refuse the same input (what `npm run mutation` measures).
test('repository URLs: each refusal names its own reason', () => {
  const cases: Array<[string, string]> = [
    ['', 'repository URL is empty'],
    [`https://h.example/${'a'.repeat(2048 - 18)}`, ''],
    [`https://h.example/${'a'.repeat(2048 - 17)}`, 'repository URL is too long'],
    ['https://h.example/a\u0001b', 'repository URL contains control characters'],
    ['https://h.example/a\u007fb', 'repository URL contains control characters'],
    ['https://h.example/a b', 'repository URL contains whitespace'],
    ['https://h.example/a\u00a0b', 'repository URL contains whitespace'],
    ['-https://h.example/r', 'repository URL starts with "-"'],
    [
      'https://***@h.example/r',
      "credentials in the URL are refused (they would be stored and shown in clear); use ssh with the app's deploy key",
    ],
    [
      'HTTPS://tok@h.example/r',
      "credentials in the URL are refused (they would be stored and shown in clear); use ssh with the app's deploy key",
    ],
    [
      'SSH://git:pw@h.example/r',
      "credentials in the URL are refused (they would be stored and shown in clear); use ssh with the app's deploy key",
    ],
    [
      'git+ssh://u@h.example/r',
      "credentials in the URL are refused (they would be stored and shown in clear); use ssh with the app's deploy key",
    ],
    ['https://h.example/a$b', 'repository URL contains shell metacharacters'],
    ['https://h.example/a!b', 'repository URL contains shell metacharacters'],
    ['https://h.example/a{b', 'repository URL contains shell metacharacters'],
    ['ext::x', 'transport helpers ("<helper>::") are refused'],
    [
      'a/b::c',
      'repository URL must be https://, http://, ssh://, git:// or user@host:path (local paths and file:// are refused)',
    ],
    ['ftp://h.example/r', 'transport "ftp" is refused (use https, http, ssh or git)'],
    ['File://h/r', 'transport "file" is refused (use https, http, ssh or git)'],
    ['http://[zz]/r', 'repository URL is not a valid URL'],
    ['ssh://%ZZ@h.example/r', 'repository user may only contain letters, digits, ".", "_", "~" and "-"'],
    ['ssh://a%2Bb@h.example/r', 'repository user may only contain letters, digits, ".", "_", "~" and "-"'],
    ['ssh://-u@h.example/r', 'repository user may only contain letters, digits, ".", "_", "~" and "-"'],
    ['ssh://a.b_c~d-e@h.example/r', ''],
    ['ssh://h%2Eexample/r', 'repository host may not be percent-encoded'],
    ['ssh://-h.example/r', 'repository host starts with "-"'],
    ['ssh://h.example-/r', 'repository host is not a host name or IP address'],
    ['ssh://.h.example/r', 'repository host is not a host name or IP address'],
    ['ssh://h_x.example/r', ''],
    ['ssh://h.example/', 'repository URL has no path'],
    ['git://h.example', 'repository URL has no path'],
    ['-oProxyCommand=x@h:p', 'repository URL starts with "-"'],
    ['u@-h:path', 'repository host is invalid'],
    ['u@.h:path', 'repository host is invalid'],
    ['u@h-:path', ''],
    ['u@h:-path', 'repository path starts with "-"'],
    ['u@h:pa-th', ''],
    ['h.example:path', 'scp-like URLs need a user (user@host:path)'],
    ['u@[::1]:srv/r', 'transport helpers ("<helper>::") are refused'],
    ['u@[1.2.3.4]:srv/r', ''],
    [
      'u@[g]:srv/r',
      'repository URL must be https://, http://, ssh://, git:// or user@host:path (local paths and file:// are refused)',
    ],
    [
      'u@h:',
      'repository URL must be https://, http://, ssh://, git:// or user@host:path (local paths and file:// are refused)',
    ],
    ['x u@h:p', 'repository URL contains whitespace'],
    [
      'ab@cd@h:p',
      'repository URL must be https://, http://, ssh://, git:// or user@host:path (local paths and file:// are refused)',
    ],
  ];
  for (const [url, reason] of cases)
    assert.deepEqual(
      checkRepoUrl(url),
      reason ? { ok: false, reason } : { ok: true },
      JSON.stringify(url).slice(0, 80),
    );
  assert.deepEqual(checkRepoUrl(undefined as unknown as string), {
    ok: false,
    reason: 'repository URL is empty',
  });
  assert.deepEqual(checkRepoUrl(42 as unknown as string), { ok: false, reason: 'repository URL is empty' });
});

test('refs: each refusal names its own reason', () => {
  const cases: Array<[string, string]> = [
    ['', 'ref is empty'],
    ['a b', 'ref may only contain letters, digits, ".", "_", "/" and "-" (at most 255)'],
    ['a'.repeat(256), 'ref may only contain letters, digits, ".", "_", "/" and "-" (at most 255)'],
    ['-a', 'ref starts with "-"'],
    ['/a', 'ref starts with "/"'],
    ['a..b', 'ref contains ".."'],
    ['a/', 'ref is not a valid git ref name'],
    ['a.', 'ref is not a valid git ref name'],
    ['a.lock', 'ref is not a valid git ref name'],
    ['a//b', 'ref is not a valid git ref name'],
    ['.a', 'ref is not a valid git ref name'],
    ['a/.b', 'ref is not a valid git ref name'],
    ['a/b.c', ''],
    ['a.b/c', ''],
    ['a-', ''],
    ['a/-b', ''],
    ['a.locks', ''],
  ];
  for (const [ref, reason] of cases)
    assert.deepEqual(checkRef(ref), reason ? { ok: false, reason } : { ok: true }, ref);
  assert.deepEqual(checkRef(undefined as unknown as string), { ok: false, reason: 'ref is empty' });
});

test('redaction: the userinfo of any scheme URL, the password only for ssh, nothing else touched', () => {
  assert.equal(redactUrl('HTTP://tok@h/r'), 'HTTP://***@h/r');
  assert.equal(redactUrl('git+https://a:b@h/r'), 'git+https://***@h/r');
  assert.equal(redactUrl('SSH://git:pw@h/r'), 'SSH://git:***@h/r');
  assert.equal(redactUrl('ssh://git@h/r'), 'ssh://git@h/r');
  assert.equal(redactUrl('https://h/r?x=a@b'), 'https://h/r?x=a@b', 'an @ after the host is no userinfo');
  assert.equal(redactUrl('https://h/a@b'), 'https://h/a@b');
  assert.equal(redactUrl('x https://tok@h/r'), 'x https://tok@h/r', 'only at the start');
  assert.equal(redactUrl('1x://tok@h/r'), '1x://tok@h/r', 'not a scheme');
  assert.equal(
    redactUrls('a https://t@h/r and ssh://g:p@h/r and ssh://g@h/r'),
    'a https://***@h/r and ssh://g:***@h/r and ssh://g@h/r',
  );
  assert.equal(redactUrls("'https://t@h/r'"), "'https://***@h/r'");
  assert.equal(redactUrls('see https://h/a@b'), 'see https://h/a@b');
  assert.equal(redactUrls('xhttps://t@h/r'), 'xhttps://***@h/r');
});
