// The suite's own honesty: what counts as CI, and a gate that fails there instead of skipping.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { isCI, componentRequired, missing } from '../_support/ci.js';

test('CI is any non-empty CI other than "false"', () => {
  for (const v of ['true', 'TRUE', '1', 'yes', 'woodpecker', ' true '])
    assert.equal(isCI({ CI: v }), true, v);
  for (const v of [undefined, '', '  ', 'false', 'False', 'FALSE'])
    assert.equal(isCI(v === undefined ? {} : { CI: v }), false, String(v));
  assert.equal(componentRequired('SVC_REQUIRE_X', { SVC_REQUIRE_X: '1' }), true);
  assert.equal(componentRequired('SVC_REQUIRE_X', { SVC_REQUIRE_X: '0' }), false);
  assert.equal(componentRequired(undefined, { CI: '1' }), true);
});

test('a missing component fails under CI and is a loud skip elsewhere', () => {
  const saved = process.env.CI;
  const skips: string[] = [];
  const t = { name: 'probe', skip: (m?: string) => void skips.push(m ?? '') };
  try {
    process.env.CI = '1';
    assert.throws(() => missing(t, 'sshd is missing'), /sshd is missing, and CI requires it/);
    assert.deepEqual(skips, []);
    process.env.CI = 'false';
    assert.equal(missing(t, 'sshd is missing'), false);
    assert.deepEqual(skips, ['sshd is missing']);
  } finally {
    if (saved === undefined) delete process.env.CI;
    else process.env.CI = saved;
  }
});
