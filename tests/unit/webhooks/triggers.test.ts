// Which pushes deploy: globs on branch and tag names, deletions never, the app's branch by default.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { matchTriggers, validatePattern, type PushRef, type TriggerRule } from '#lib/webhooks/index.js';

const SHA = '0d1a26e67d8f5eaf1f6ba5c57fc3c7d91ac0fd1c';
const branch = (name: string, deleted = false): PushRef => ({
  ref_type: 'branch',
  name,
  ref: `refs/heads/${name}`,
  after: deleted ? null : SHA,
  deleted,
});
const tag = (name: string, deleted = false): PushRef => ({
  ref_type: 'tag',
  name,
  ref: `refs/tags/${name}`,
  after: deleted ? null : SHA,
  deleted,
});
const rule = (event: 'push' | 'tag', pattern: string, enabled = true): TriggerRule => ({
  event,
  pattern,
  enabled,
});

test('no enabled rules: the configured branch deploys on push, other branches and tags do not', () => {
  assert.deepEqual(matchTriggers([], branch('main'), 'main'), {
    deploy: true,
    ref: 'main',
    trigger: 'push',
    commit: SHA,
    pattern: null,
  });
  const other = matchTriggers([], branch('dev'), 'main');
  assert.equal(other.deploy, false);
  assert.match((other as { reason: string }).reason, /not the app's branch "main"/);
  assert.equal(matchTriggers([], tag('v1.0.0'), 'main').deploy, false);
  // Disabled rules count as none.
  assert.equal(matchTriggers([rule('push', 'dev', false)], branch('main'), 'main').deploy, true);
  assert.equal(matchTriggers([rule('push', 'dev', false)], branch('dev'), 'main').deploy, false);
});

test('push rules glob branch names; tag rules glob tag names', () => {
  const rules = [rule('push', 'release/*'), rule('push', 'main'), rule('tag', 'v*.*.*')];
  assert.deepEqual(matchTriggers(rules, branch('release/1.x'), 'main'), {
    deploy: true,
    ref: 'release/1.x',
    trigger: 'push',
    commit: SHA,
    pattern: 'release/*',
  });
  assert.equal(matchTriggers(rules, branch('main'), 'main').deploy, true);
  assert.equal(
    matchTriggers(rules, branch('release/1.x/hotfix'), 'main').deploy,
    false,
    '* stays within one segment',
  );
  assert.equal(matchTriggers(rules, branch('dev'), 'main').deploy, false);
  assert.deepEqual(matchTriggers(rules, tag('v1.2.3'), 'main'), {
    deploy: true,
    ref: 'v1.2.3',
    trigger: 'tag',
    commit: SHA,
    pattern: 'v*.*.*',
  });
  assert.equal(matchTriggers(rules, tag('nightly'), 'main').deploy, false);
  // A tag named like a branch rule is not matched by it, and the other way round.
  assert.equal(matchTriggers([rule('push', 'v*')], tag('v1'), 'main').deploy, false);
  assert.equal(
    matchTriggers([rule('tag', 'main')], branch('main'), 'main').deploy,
    false,
    'rules exist, so the default no longer applies',
  );
  assert.equal(matchTriggers([rule('push', 'feature/**')], branch('feature/a/b'), 'main').deploy, true);
  assert.equal(matchTriggers([rule('push', '{main,staging}')], branch('staging'), 'main').deploy, true);
  assert.equal(
    matchTriggers([rule('push', 'Main')], branch('main'), 'main').deploy,
    false,
    'case-sensitive like git',
  );
});

test('a deletion never deploys, whatever the rules', () => {
  for (const r of [[], [rule('push', '*')], [rule('push', '**'), rule('tag', '**')]]) {
    const b = matchTriggers(r, branch('main', true), 'main');
    assert.equal(b.deploy, false);
    assert.match((b as { reason: string }).reason, /deleted/);
    assert.equal(matchTriggers(r, tag('v1', true), 'main').deploy, false);
  }
});

test('several refs in one delivery: the first that deploys wins', () => {
  const push = { ...branch('gone', true), also: [branch('dev'), branch('main')] };
  assert.deepEqual(matchTriggers([], push, 'main'), {
    deploy: true,
    ref: 'main',
    trigger: 'push',
    commit: SHA,
    pattern: null,
  });
  assert.match(
    (matchTriggers([], { ...branch('gone', true), also: [branch('dev')] }, 'main') as { reason: string })
      .reason,
    /"gone" was deleted/,
  );
});

test('validatePattern', () => {
  assert.deepEqual(validatePattern('release/*'), { ok: true });
  assert.deepEqual(validatePattern('v[0-9]*'), { ok: true });
  for (const bad of ['', 'a'.repeat(256), 'main\n', 'ma\u0000in', ' main', 'main ', 42, null])
    assert.equal(validatePattern(bad).ok, false, JSON.stringify(bad));
  assert.equal(validatePattern('a'.repeat(255)).ok, true);
  // An invalid stored rule is skipped rather than crashing the match.
  assert.equal(matchTriggers([rule('push', 'x\n')], branch('main'), 'main').deploy, true);
});
