// Pull/merge request payloads of each forge read into one shape: deploy or remove, number, head
// branch and commit, target branch, and whether it comes from a fork.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isPullRequestEvent, parsePullRequest } from '#lib/webhooks/index.js';
import { matchPreviewTarget } from '#lib/webhooks/triggers.js';
import {
  SHA_A,
  enc,
  githubPullRequest,
  giteaPullRequest,
  gitlabMergeRequest,
  bitbucketPullRequest,
} from './_payloads.js';

test('which events are pull request events, per provider', () => {
  assert.ok(isPullRequestEvent('github', 'pull_request'));
  assert.ok(!isPullRequestEvent('github', 'push'));
  assert.ok(isPullRequestEvent('gitea', 'pull_request'));
  assert.ok(isPullRequestEvent('gitea', 'pull_request_sync'));
  assert.ok(isPullRequestEvent('gitlab', 'Merge Request Hook'));
  assert.ok(!isPullRequestEvent('gitlab', 'Push Hook'));
  assert.ok(isPullRequestEvent('bitbucket', 'pullrequest:created'));
  assert.ok(!isPullRequestEvent('bitbucket', 'repo:push'));
});

test('github: opened, synchronize and reopened deploy; closed removes; other actions are ignored; forks are told apart', () => {
  for (const action of ['opened', 'synchronize', 'reopened']) {
    const p = parsePullRequest(
      'github',
      'pull_request',
      enc(githubPullRequest(action, { number: 12, head: 'feature/a' })),
    );
    assert.deepEqual(p, {
      kind: 'pull_request',
      action: 'deploy',
      number: 12,
      title: 'Update the README with new information.',
      branch: 'feature/a',
      commit: SHA_A,
      target: 'main',
      fork: false,
      repo_url: null,
    });
  }
  const closed = parsePullRequest('github', 'pull_request', enc(githubPullRequest('closed')));
  assert.equal(closed.kind === 'pull_request' && closed.action, 'remove');
  assert.deepEqual(parsePullRequest('github', 'pull_request', enc(githubPullRequest('labeled'))), {
    kind: 'ignored',
    reason: 'pull request action "labeled" changes no preview',
  });
  const fork = parsePullRequest('github', 'pull_request', enc(githubPullRequest('opened', { fork: true })));
  assert.ok(fork.kind === 'pull_request');
  assert.equal(fork.fork, true);
  assert.equal(fork.repo_url, 'https://github.com/Mallory/Hello-World.git');
});

test('gitea/forgejo: opened, synchronized (either header) and closed; a fork', () => {
  const opened = parsePullRequest('gitea', 'pull_request', enc(giteaPullRequest('opened', { number: 4 })));
  assert.ok(opened.kind === 'pull_request');
  assert.deepEqual(
    [opened.action, opened.number, opened.branch, opened.target, opened.fork],
    ['deploy', 4, 'feature', 'main', false],
  );
  const sync = parsePullRequest('gitea', 'pull_request', enc(giteaPullRequest('synchronized')));
  assert.equal(sync.kind === 'pull_request' && sync.action, 'deploy');
  const syncHeader = parsePullRequest('gitea', 'pull_request_sync', enc(giteaPullRequest('synchronized')));
  assert.equal(syncHeader.kind === 'pull_request' && syncHeader.action, 'deploy');
  const closed = parsePullRequest('gitea', 'pull_request', enc(giteaPullRequest('closed')));
  assert.equal(closed.kind === 'pull_request' && closed.action, 'remove');
  const fork = parsePullRequest('gitea', 'pull_request', enc(giteaPullRequest('opened', { fork: true })));
  assert.ok(
    fork.kind === 'pull_request' &&
      fork.fork &&
      fork.repo_url === 'http://localhost:3000/mallory/webhooks.git',
  );
});

test('gitlab: open, reopen and update with new commits deploy; close and merge remove; an update without commits is ignored', () => {
  const open = parsePullRequest('gitlab', 'Merge Request Hook', enc(gitlabMergeRequest('open', { iid: 8 })));
  assert.deepEqual(open, {
    kind: 'pull_request',
    action: 'deploy',
    number: 8,
    title: 'MS-Viewport',
    branch: 'ms-viewport',
    commit: SHA_A,
    target: 'master',
    fork: false,
    repo_url: null,
  });
  assert.equal(
    (
      parsePullRequest('gitlab', 'Merge Request Hook', enc(gitlabMergeRequest('reopen'))) as {
        action: string;
      }
    ).action,
    'deploy',
  );
  assert.equal(
    (
      parsePullRequest(
        'gitlab',
        'Merge Request Hook',
        enc(gitlabMergeRequest('update', { oldrev: true })),
      ) as { action: string }
    ).action,
    'deploy',
  );
  assert.equal(
    parsePullRequest('gitlab', 'Merge Request Hook', enc(gitlabMergeRequest('update'))).kind,
    'ignored',
  );
  assert.equal(
    (parsePullRequest('gitlab', 'Merge Request Hook', enc(gitlabMergeRequest('close'))) as { action: string })
      .action,
    'remove',
  );
  assert.equal(
    (parsePullRequest('gitlab', 'Merge Request Hook', enc(gitlabMergeRequest('merge'))) as { action: string })
      .action,
    'remove',
  );
  assert.equal(
    parsePullRequest('gitlab', 'Merge Request Hook', enc(gitlabMergeRequest('approved'))).kind,
    'ignored',
  );
  const fork = parsePullRequest(
    'gitlab',
    'Merge Request Hook',
    enc(gitlabMergeRequest('open', { fork: true })),
  );
  assert.ok(
    fork.kind === 'pull_request' &&
      fork.fork &&
      fork.repo_url === 'http://example.com/awesome_space/awesome_project.git',
  );
  assert.equal(
    parsePullRequest(
      'gitlab',
      'Merge Request Hook',
      enc({ ...gitlabMergeRequest('open'), object_kind: 'push' }),
    ).kind,
    'invalid',
  );
});

test('bitbucket: created and updated deploy; fulfilled (merged) and rejected (declined) remove; the short commit is kept', () => {
  for (const ev of ['created', 'updated']) {
    const p = parsePullRequest('bitbucket', `pullrequest:${ev}`, enc(bitbucketPullRequest({ id: 5 })));
    assert.deepEqual(p, {
      kind: 'pull_request',
      action: 'deploy',
      number: 5,
      title: 'Add the feature',
      branch: 'feature/x',
      commit: SHA_A.slice(0, 12),
      target: 'main',
      fork: false,
      repo_url: null,
    });
  }
  for (const ev of ['fulfilled', 'rejected'])
    assert.equal(
      (parsePullRequest('bitbucket', `pullrequest:${ev}`, enc(bitbucketPullRequest())) as { action: string })
        .action,
      'remove',
    );
  assert.equal(
    parsePullRequest('bitbucket', 'pullrequest:comment_created', enc(bitbucketPullRequest())).kind,
    'ignored',
  );
  const fork = parsePullRequest(
    'bitbucket',
    'pullrequest:created',
    enc(bitbucketPullRequest({ fork: true })),
  );
  assert.ok(
    fork.kind === 'pull_request' &&
      fork.fork &&
      fork.repo_url === 'https://bitbucket.org/mallory/project.git',
  );
});

test('hostile values in a signed body are invalid: branch names with shell characters or "..", a missing number, a bad commit', () => {
  for (const head of ['$(id)', '../x', '-rf', 'a b'])
    assert.equal(
      parsePullRequest('github', 'pull_request', enc(githubPullRequest('opened', { head }))).kind,
      'invalid',
      head,
    );
  assert.equal(
    parsePullRequest('github', 'pull_request', enc(githubPullRequest('opened', { sha: 'zz' }))).kind,
    'invalid',
  );
  const noNumber = githubPullRequest('opened') as Record<string, unknown>;
  delete noNumber.number;
  (noNumber.pull_request as Record<string, unknown>).number = 'x';
  assert.equal(parsePullRequest('github', 'pull_request', enc(noNumber)).kind, 'invalid');
  assert.equal(parsePullRequest('gitlab', 'Merge Request Hook', enc('not json')).kind, 'invalid');
});

test('pull_request rules limit target branches; push rules do not, and a pull_request rule does not stop pushes', async () => {
  const { matchTriggers } = await import('#lib/webhooks/triggers.js');
  assert.deepEqual(matchPreviewTarget([], 'anything'), { ok: true });
  const rules = [{ event: 'pull_request' as const, pattern: 'release/*', enabled: true }];
  assert.deepEqual(matchPreviewTarget(rules, 'release/1.x'), { ok: true });
  assert.equal(matchPreviewTarget(rules, 'main').ok, false);
  assert.deepEqual(matchPreviewTarget([{ ...rules[0]!, enabled: false }], 'main'), { ok: true });
  assert.deepEqual(matchPreviewTarget([{ event: 'push', pattern: 'nope', enabled: true }], 'main'), {
    ok: true,
  });
  // With only a pull_request rule, a push of the app's branch still deploys as without rules.
  const push = {
    ref_type: 'branch' as const,
    name: 'main',
    ref: 'refs/heads/main',
    after: SHA_A,
    deleted: false,
  };
  assert.equal(matchTriggers(rules, push, 'main').deploy, true);
});
