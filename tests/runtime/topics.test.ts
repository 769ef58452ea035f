// The topic table (runtime/topics.ts): which names a client may subscribe to, and what each needs.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseTopic, TOPICS } from '../../runtime/topics.js';

test('every kind of the table parses, a resource kind only with an id and the others only without', () => {
  for (const [name, kind] of Object.entries(TOPICS)) {
    const withId = parseTopic(`${name}:abc123`);
    const bare = parseTopic(name);
    if (kind.resource) {
      assert.deepEqual(withId && { name: withId.name, id: withId.id }, { name, id: 'abc123' }, name);
      assert.equal(bare, null, `${name} without an id`);
    } else {
      assert.deepEqual(bare && { name: bare.name, id: bare.id }, { name, id: '' }, name);
      assert.equal(withId, null, `${name} with an id`);
    }
  }
});

test('names outside the table, malformed ids and non-strings are no topic', () => {
  for (const t of [
    'nope',
    'nope:abc',
    'logs:',
    'logs:ABC',
    'logs:a/b',
    `logs:${'a'.repeat(65)}`,
    'toString',
    '__proto__',
    'constructor:abc',
    '',
    42,
    null,
    undefined,
  ])
    assert.equal(parseTopic(t), null, String(t));
  assert.ok(parseTopic(`logs:${'a'.repeat(64)}`));
});

test('what each topic needs: per-app topics read their app, fleet topics app.read, the instance instance.read', async () => {
  const db = null as never;
  assert.deepEqual(await TOPICS.logs!.grant(db, 'app1'), { permission: 'app.read', appId: 'app1' });
  assert.deepEqual(await TOPICS.stats!.grant(db, 'app1'), { permission: 'app.read', appId: 'app1' });
  for (const fleet of ['deployments', 'apps', 'backups'])
    assert.deepEqual(await TOPICS[fleet]!.grant(db, ''), { permission: 'app.read', appId: null }, fleet);
  for (const own of ['host', 'security'])
    assert.deepEqual(await TOPICS[own]!.grant(db, ''), { permission: 'instance.read', appId: null }, own);
  assert.equal(TOPICS.build!.resource?.noun, 'deployment');
});
