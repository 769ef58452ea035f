// What the audit shows a reader limited to some apps about the others (docs/permissions.md "App
// lists"): a domain moved from app A to app B stays in A's audit, but neither its listing nor its
// diff names B to a reader limited to A; an owner sees B in both.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { people, postDomain, twoApps } from '../../_support/people.js';

let s: TestApp;
let owner: Client;
let appA: string;
let appB: string;
const NAME_B = 'moved-to-bravo';

before(async () => {
  s = await startTestApp();
  owner = await adminClient(s);
  [appA, appB] = await twoApps(owner, ['moved-from-alpha', NAME_B]);
});
after(() => s.stop());

test('a domain moved from A to B: a deployer or viewer limited to A reads its entry and diff without B; an owner sees B', async () => {
  const dom = await postDomain(owner, 'moved.example.com', appA);
  assert.equal(dom.status, 201, dom.text);
  const id = dom.body.domain.id;
  const moved = await owner.req('PATCH', `/api/domains/${id}`, { app_id: appB, service: 'api', port: 8080 });
  assert.equal(moved.status, 200, moved.text);

  const ownerList = await owner.req('GET', '/api/audit?limit=200');
  const entry = ownerList.body.items.find((e: any) => e.event === 'domain.updated' && e.target.id === id);
  assert.ok(entry, 'the move is audited');
  assert.equal(entry.app_id, appA, 'an entry of the app the domain left');
  assert.equal(entry.detail.after.app_id, appB);
  assert.ok(ownerList.text.includes(NAME_B), "the owner's listing names B");
  const ownerDiff = await owner.req('GET', `/api/audit/${entry.id}/diff`);
  assert.equal(ownerDiff.status, 200, ownerDiff.text);
  const ownerRow = ownerDiff.body.rows.find((r: any) => r.field === 'app_id');
  assert.deepEqual([ownerRow.before, ownerRow.after], [appA, appB]);

  for (const role of ['deployer', 'viewer'] as const) {
    const reader = (await people(s).operator(`only-a-${role}`, role, [appA])).client;
    const list = await reader.req('GET', '/api/audit?limit=200');
    assert.equal(list.status, 200, list.text);
    const seen = list.body.items.find((e: any) => e.id === entry.id);
    assert.ok(seen, `${role}: the move stays in A's audit`);
    assert.equal(seen.detail.before.app_id, appA);
    const diff = await reader.req('GET', `/api/audit/${entry.id}/diff`);
    assert.equal(diff.status, 200, diff.text);
    const rows = Object.fromEntries(diff.body.rows.map((r: any) => [r.field, r]));
    assert.deepEqual(rows.app_id, { field: 'app_id', status: 'removed', masked: false, before: appA });
    assert.equal(rows.service.after, undefined, "where it points inside B is B's");
    for (const [what, text] of [
      ['listing', list.text],
      ['diff', diff.text],
    ] as const) {
      assert.ok(!text.includes(appB), `${role}: the ${what} names B's id: ${text}`);
      assert.ok(!text.includes(NAME_B), `${role}: the ${what} names B: ${text}`);
    }
  }
});
