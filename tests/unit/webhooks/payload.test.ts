// Push payloads of each forge, in their documented formats, read into one shape.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parsePushEvent } from '#lib/webhooks/index.js';
import {
  SHA_A,
  SHA_B,
  ZERO,
  githubPush,
  githubPing,
  giteaPush,
  giteaDelete,
  gitlabPush,
  gitlabTagPush,
  bitbucketPush,
  enc,
} from './_payloads.js';

test('github: branch push, tag push, deletion, ping, other events', () => {
  assert.deepEqual(parsePushEvent('github', 'push', enc(githubPush('refs/heads/main'))), {
    kind: 'push',
    ref_type: 'branch',
    name: 'main',
    ref: 'refs/heads/main',
    after: SHA_A,
    deleted: false,
    before: SHA_B,
    head_subject: 'Update README.md',
  });
  assert.deepEqual(parsePushEvent('github', 'push', enc(githubPush('refs/heads/release/1.x'))), {
    kind: 'push',
    ref_type: 'branch',
    name: 'release/1.x',
    ref: 'refs/heads/release/1.x',
    after: SHA_A,
    deleted: false,
    before: SHA_B,
    head_subject: 'Update README.md',
  });
  const tag = parsePushEvent('github', 'push', enc(githubPush('refs/tags/v1.2.0')));
  assert.equal(tag.kind === 'push' && tag.ref_type, 'tag');
  assert.equal(tag.kind === 'push' && tag.name, 'v1.2.0');
  assert.deepEqual(parsePushEvent('github', 'push', enc(githubPush('refs/heads/feature/x', ZERO))), {
    kind: 'push',
    ref_type: 'branch',
    name: 'feature/x',
    ref: 'refs/heads/feature/x',
    after: null,
    deleted: true,
  });
  assert.deepEqual(
    parsePushEvent(
      'github',
      'delete',
      enc({ ref: 'v0.9', ref_type: 'tag', pusher_type: 'user', repository: {}, sender: {} }),
    ),
    {
      kind: 'push',
      ref_type: 'tag',
      name: 'v0.9',
      ref: 'refs/tags/v0.9',
      after: null,
      deleted: true,
    },
  );
  assert.deepEqual(parsePushEvent('github', 'ping', enc(githubPing)), { kind: 'ping' });
  assert.equal(parsePushEvent('github', 'create', enc({ ref: 'v1', ref_type: 'tag' })).kind, 'ignored');
  assert.equal(parsePushEvent('github', 'issues', enc({ action: 'opened' })).kind, 'ignored');
  assert.equal(parsePushEvent('github', 'push', enc(githubPush('refs/notes/commits'))).kind, 'ignored');
});

test('github: form-encoded deliveries (payload=...) read the same', () => {
  const body = enc(`payload=${encodeURIComponent(JSON.stringify(githubPush('refs/heads/main')))}`);
  const r = parsePushEvent('github', 'push', body);
  assert.equal(r.kind, 'push');
});

test('gitea/forgejo: push, tag push, zero-after deletion, delete event', () => {
  assert.deepEqual(parsePushEvent('gitea', 'push', enc(giteaPush('refs/heads/develop'))), {
    kind: 'push',
    ref_type: 'branch',
    name: 'develop',
    ref: 'refs/heads/develop',
    after: 'bffeb74224043ba2feb48d137756c8a9331c449a',
    deleted: false,
    before: '28e1879d029cb852e4844d9c718537df08844e03',
    head_subject: 'Webhooks Yay!',
  });
  const tag = parsePushEvent('gitea', 'push', enc(giteaPush('refs/tags/v2.0.0')));
  assert.equal(tag.kind === 'push' && `${tag.ref_type}:${tag.name}`, 'tag:v2.0.0');
  const del = parsePushEvent('gitea', 'push', enc(giteaPush('refs/heads/develop', ZERO)));
  assert.equal(del.kind === 'push' && del.deleted, true);
  assert.deepEqual(parsePushEvent('gitea', 'delete', enc(giteaDelete('feature/old', 'branch'))), {
    kind: 'push',
    ref_type: 'branch',
    name: 'feature/old',
    ref: 'refs/heads/feature/old',
    after: null,
    deleted: true,
  });
  assert.equal(parsePushEvent('gitea', 'create', enc(giteaDelete('v1', 'tag'))).kind, 'ignored');
  assert.equal(parsePushEvent('gitea', 'pull_request', enc({ action: 'opened' })).kind, 'ignored');
});

test('gitlab: push, tag push (peeled commit), deletion, mismatched object_kind', () => {
  assert.deepEqual(parsePushEvent('gitlab', 'Push Hook', enc(gitlabPush('refs/heads/master'))), {
    kind: 'push',
    ref_type: 'branch',
    name: 'master',
    ref: 'refs/heads/master',
    after: 'da1560886d4f094c3e6c9ef40349f7d38b5d27d7',
    deleted: false,
    before: '95790bf891e76fee5e1747ab589903a6a1f80f22',
    head_subject: 'fixed readme',
  });
  // Annotated tag: `after` is the tag object, checkout_sha the commit it points at. A new tag's
  // all-zero `before` is no previous commit.
  const peeled = '5937ac0a7beb003549fc5fd26fc247adbce4a52e';
  assert.deepEqual(
    parsePushEvent(
      'gitlab',
      'Tag Push Hook',
      enc(gitlabTagPush('refs/tags/v1.0.0', '82b3d5ae55f7080f1e6022629cdb57bfae7cccc7', peeled)),
    ),
    {
      kind: 'push',
      ref_type: 'tag',
      name: 'v1.0.0',
      ref: 'refs/tags/v1.0.0',
      after: peeled,
      deleted: false,
      head_subject: 'Tag message',
    },
  );
  assert.deepEqual(
    parsePushEvent('gitlab', 'Tag Push Hook', enc(gitlabTagPush('refs/tags/v1.0.0', ZERO, null))),
    {
      kind: 'push',
      ref_type: 'tag',
      name: 'v1.0.0',
      ref: 'refs/tags/v1.0.0',
      after: null,
      deleted: true,
    },
  );
  assert.equal(
    (
      parsePushEvent('gitlab', 'Push Hook', enc(gitlabPush('refs/heads/master', ZERO))) as {
        deleted: boolean;
      }
    ).deleted,
    true,
  );
  assert.equal(
    parsePushEvent('gitlab', 'Tag Push Hook', enc(gitlabPush('refs/heads/master'))).kind,
    'invalid',
  );
  assert.equal(
    parsePushEvent('gitlab', 'Push Hook', enc({ ...gitlabPush('refs/tags/v1'), object_kind: 'push' })).kind,
    'invalid',
  );
  assert.equal(
    parsePushEvent('gitlab', 'Merge Request Hook', enc({ object_kind: 'merge_request' })).kind,
    'ignored',
  );
});

test('bitbucket: branch push, tag push, deletion (new: null), several changes', () => {
  const main = {
    type: 'branch' as const,
    name: 'main',
    hash: '709d658dc5b6d6afcd46049c2f332ee3f515a67d',
    message: 'Merge feature\n\nbody',
  };
  const oldMain = { type: 'branch' as const, name: 'main', hash: '1e65c05c1d5171631d92438a13901ca7dae9618c' };
  assert.deepEqual(
    parsePushEvent('bitbucket', 'repo:push', enc(bitbucketPush([{ next: main, prev: oldMain }]))),
    {
      kind: 'push',
      ref_type: 'branch',
      name: 'main',
      ref: 'refs/heads/main',
      after: main.hash,
      deleted: false,
      before: oldMain.hash,
      head_subject: 'Merge feature',
    },
  );
  const tag = parsePushEvent(
    'bitbucket',
    'repo:push',
    enc(bitbucketPush([{ next: { type: 'tag', name: 'v3.1', hash: main.hash }, prev: null }])),
  );
  assert.equal(tag.kind === 'push' && `${tag.ref_type}:${tag.name}:${tag.after}`, `tag:v3.1:${main.hash}`);
  assert.deepEqual(
    parsePushEvent(
      'bitbucket',
      'repo:push',
      enc(bitbucketPush([{ next: null, prev: { type: 'branch', name: 'gone', hash: main.hash } }])),
    ),
    {
      kind: 'push',
      ref_type: 'branch',
      name: 'gone',
      ref: 'refs/heads/gone',
      after: null,
      deleted: true,
    },
  );
  // A deletion and an update in one push: the update leads, the deletion follows in `also`.
  const both = parsePushEvent(
    'bitbucket',
    'repo:push',
    enc(
      bitbucketPush([
        { next: null, prev: { type: 'branch', name: 'gone', hash: main.hash } },
        { next: main, prev: oldMain },
      ]),
    ),
  );
  assert.equal(both.kind === 'push' && both.name, 'main');
  assert.equal(both.kind === 'push' && both.also?.[0]?.name, 'gone');
  assert.deepEqual(parsePushEvent('bitbucket', 'diagnostics:ping', enc({ test: true })), { kind: 'ping' });
  assert.equal(parsePushEvent('bitbucket', 'pullrequest:created', enc({})).kind, 'ignored');
  assert.equal(parsePushEvent('bitbucket', 'repo:push', enc({ push: {} })).kind, 'invalid');
});

test('bitbucket server: repo:refs_changed with ADD, UPDATE and DELETE changes', () => {
  // As documented for Bitbucket Data Center's "Repository push" event.
  const body = {
    eventKey: 'repo:refs_changed',
    date: '2017-09-19T09:58:11+1000',
    actor: {
      name: 'admin',
      emailAddress: 'admin@example.com',
      id: 1,
      displayName: 'Administrator',
      active: true,
      slug: 'admin',
      type: 'NORMAL',
    },
    repository: {
      slug: 'repository',
      id: 84,
      name: 'repository',
      scmId: 'git',
      state: 'AVAILABLE',
      forkable: true,
      project: { key: 'PROJ', id: 84, name: 'project', public: false, type: 'NORMAL' },
      public: false,
    },
    changes: [
      {
        ref: { id: 'refs/heads/old', displayId: 'old', type: 'BRANCH' },
        refId: 'refs/heads/old',
        fromHash: SHA_A,
        toHash: ZERO,
        type: 'DELETE',
      },
      {
        ref: { id: 'refs/heads/master', displayId: 'master', type: 'BRANCH' },
        refId: 'refs/heads/master',
        fromHash: 'ecddabb624f6f5ba43816f5926e580a5f680a932',
        toHash: '178864a7d521b6f5e720b386b2c2b0ef8563e0dc',
        type: 'UPDATE',
      },
    ],
  };
  const r = parsePushEvent('bitbucket', 'repo:refs_changed', enc(body));
  assert.deepEqual(r, {
    kind: 'push',
    ref_type: 'branch',
    name: 'master',
    ref: 'refs/heads/master',
    after: '178864a7d521b6f5e720b386b2c2b0ef8563e0dc',
    deleted: false,
    before: 'ecddabb624f6f5ba43816f5926e580a5f680a932',
    also: [{ ref_type: 'branch', name: 'old', ref: 'refs/heads/old', after: null, deleted: true }],
  });
  const tag = parsePushEvent(
    'bitbucket',
    'repo:refs_changed',
    enc({
      ...body,
      changes: [
        {
          ref: { id: 'refs/tags/v1', displayId: 'v1', type: 'TAG' },
          refId: 'refs/tags/v1',
          fromHash: ZERO,
          toHash: SHA_A,
          type: 'ADD',
        },
      ],
    }),
  );
  assert.equal(tag.kind === 'push' && `${tag.ref_type}:${tag.name}`, 'tag:v1');
  assert.equal(
    parsePushEvent(
      'bitbucket',
      'repo:refs_changed',
      enc({ ...body, changes: [{ refId: 'refs/heads/$(id)', toHash: SHA_A, type: 'UPDATE' }] }),
    ).kind,
    'invalid',
  );
});

test('a validly signed body that is not JSON, or not an object, is invalid', () => {
  for (const body of ['not json', '', '[1,2]', 'null', '"str"', '{"ref": "refs/heads/main",']) {
    assert.equal(parsePushEvent('github', 'push', enc(body)).kind, 'invalid', body);
  }
  assert.equal(
    parsePushEvent('gitlab', 'Push Hook', new Uint8Array([0x7b, 0xff, 0xfe, 0x7d])).kind,
    'invalid',
    'not UTF-8',
  );
  assert.equal(parsePushEvent('gitea', 'push', enc({ after: SHA_A })).kind, 'invalid', 'no ref');
  assert.equal(
    parsePushEvent('github', 'push', enc({ ...githubPush('refs/heads/main'), after: 'abc' })).kind,
    'invalid',
    'short sha',
  );
  assert.equal(
    parsePushEvent('github', 'push', enc({ ...githubPush('refs/heads/main'), after: 42 })).kind,
    'invalid',
    'numeric sha',
  );
  assert.equal(
    parsePushEvent('github', 'push', enc({ ...githubPush('refs/heads/main'), after: undefined })).kind,
    'invalid',
    'missing after',
  );
});

test('refs with shell characters, a leading "-", "..", newlines or odd prefixes are invalid', () => {
  const bad = [
    'refs/heads/$(reboot)',
    'refs/heads/-rf',
    'refs/heads/a..b',
    'refs/heads/main\nx',
    'refs/heads/a;b',
    'refs/heads/`id`',
    'refs/tags/v1 && id',
    'refs/heads/',
    'refs/heads//x',
    'refs/heads/x.lock',
    '--upload-pack=x',
  ];
  for (const ref of bad) {
    assert.equal(
      parsePushEvent('github', 'push', enc(githubPush(ref))).kind,
      'invalid',
      `github ${JSON.stringify(ref)}`,
    );
    assert.equal(
      parsePushEvent('gitea', 'push', enc(giteaPush(ref))).kind,
      'invalid',
      `gitea ${JSON.stringify(ref)}`,
    );
    assert.equal(
      parsePushEvent('gitlab', 'Push Hook', enc(gitlabPush(ref))).kind,
      'invalid',
      `gitlab ${JSON.stringify(ref)}`,
    );
  }
  for (const name of ['-x', 'a..b', '$(id)', 'a b']) {
    assert.equal(
      parsePushEvent(
        'bitbucket',
        'repo:push',
        enc(bitbucketPush([{ next: { type: 'branch', name, hash: SHA_A }, prev: null }])),
      ).kind,
      'invalid',
      name,
    );
    assert.equal(
      parsePushEvent('github', 'delete', enc({ ref: name, ref_type: 'branch' })).kind,
      'invalid',
      name,
    );
  }
});

test('head subject is one line, without control characters, bounded', () => {
  const r = parsePushEvent(
    'github',
    'push',
    enc(githubPush('refs/heads/main', SHA_A, `\u001b[31mred\u001b[0m ${'x'.repeat(500)}\nsecond line`)),
  );
  assert.equal(r.kind, 'push');
  const s = (r as { head_subject: string }).head_subject;
  assert.ok(!/[\u0000-\u001f]/.test(s));
  assert.ok(s.startsWith('red xxx'), s);
  assert.ok(s.length <= 200);
});
