// The security review of people and permissions, in-process: each attack a reviewer (or a peer's
// CVE) tries, replayed. A credential limited to apps acting outside them, links outliving what
// their creator may grant, the audit and the traffic snapshot naming other apps, session fixation
// and CSRF on the accept, a token minting a wider one, an admin reaching for the owner role.
// What needs the node adapter or a socket is in tests/runtime: the invitation link and the Host
// header (proxy-headers.e2e.test.ts), a narrowed socket on build: topics (permissions-ws.e2e.test.ts).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, ADMIN, Client } from '../_support/server.js';
import { startTestApp, type TestApp } from '../_support/request.js';
import { invalidateCredentials } from '#lib/auth/cache.js';
import { recordAudit } from '#lib/audit/index.js';
import type { Role } from '#lib/auth/roles.js';
import {
  insertDomainRow,
  invite,
  linkToken,
  people,
  postDomain,
  twoApps,
  type People,
} from '../_support/people.js';

let s: TestApp;
let owner: Client;
let appA: string;
let appB: string;
let n = 0;
const uniq = (p: string) => `${p}${++n}`;
const PASSWORD = 'a long enough passphrase';
let team: People;

/** An operator with a stepped-up session and token, named afresh. */
const person = (role: Role, appIds: string[] | null = null) =>
  team.operator(uniq(role), role, appIds, { stepUp: true });

const opens = async (token: string) =>
  (await new Client(s.url).req('GET', `/api/invitations/${token}`)).status;

before(async () => {
  s = await startTestApp();
  owner = await adminClient(s);
  assert.equal((await owner.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  team = people(s);
  [appA, appB] = await twoApps(owner, ['rev-a', 'rev-b'], 'nginx:1.27');
});

after(async () => {
  await s?.stop();
});

test('an admin token limited to app A cannot act outside A: no new app, import, add-on, redirect or instance change', async () => {
  const admin = await person('admin');
  const t = await team.tokenOf(admin.id, { scopes: null, appIds: [appA] }, { stepUp: true });
  const refused: Array<[string, string, unknown]> = [
    ['POST', '/api/apps', { name: 'sneaky', source: { type: 'image', image: 'nginx:1.27' } }],
    ['POST', '/api/apps/import', { name: 'sneaky2' }],
    ['POST', '/api/addons/redis/install', {}],
    ['POST', '/api/domains', { hostname: 'go.example.com', redirect_to: 'https://example.org' }],
    ['POST', '/api/operators/invitations', { role: 'admin' }],
  ];
  for (const [method, path, body] of refused) {
    const r = await t.req(method, path, body);
    assert.equal(r.status, 403, `${method} ${path}: ${r.text}`);
    assert.equal(r.body.code, 'forbidden', `${method} ${path}`);
  }
  // Another app's domain: as absent as any other thing of app B.
  const other = await postDomain(t, 'b.example.com', appB);
  assert.equal(other.status, 404, other.text);
  const me = (await t.req('GET', '/api/auth/me')).body.permissions as string[];
  for (const p of ['instance.admin', 'operators.manage', 'owners.manage', 'instance.owner'])
    assert.ok(!me.includes(p), p);
  assert.ok(me.includes('app.admin'));
  // Within A, app.admin stands; the listing keeps only A; nothing was created.
  const patch = await t.req('PATCH', `/api/apps/${appA}`, { source: { type: 'image', image: 'nginx:1.27' } });
  assert.equal(patch.status, 200, patch.text);
  assert.deepEqual(
    (await t.req('GET', '/api/apps')).body.items.map((a: any) => a.id),
    [appA],
  );
  assert.equal((await owner.req('GET', '/api/apps')).body.items.length, 2);
  // The same admin's unlimited session still creates apps.
  const made = await admin.client.req('POST', '/api/apps', {
    name: uniq('free'),
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(made.status, 201, made.text);
  assert.equal((await owner.req('DELETE', `/api/apps/${made.body.app.id}`)).status < 300, true);
});

test('a token never mints a wider one: no other app, no instance permission next to an app list', async () => {
  const admin = await person('admin');
  const t = await team.tokenOf(admin.id, { scopes: null, appIds: [appA] }, { stepUp: true });
  const wider = await t.req('POST', '/api/auth/api-tokens', { name: 'b', app_ids: [appB] });
  assert.equal(wider.status, 400, wider.text);
  const instance = await t.req('POST', '/api/auth/api-tokens', { name: 'ops', scopes: ['operators.manage'] });
  assert.equal(instance.status, 400, instance.text);
  assert.equal(instance.body.details[0].field, 'scopes');
  const child = await t.req('POST', '/api/auth/api-tokens', { name: 'child' });
  assert.equal(child.status, 201, child.text);
  assert.deepEqual(child.body.app_ids, [appA], 'the limit is inherited');
  const mixed = await admin.client.req('POST', '/api/auth/api-tokens', {
    name: 'mixed',
    scopes: ['instance.admin'],
    app_ids: [appA],
  });
  assert.equal(mixed.status, 400, mixed.text);
});

test('links outlive nothing: demoting, disabling or deleting their creator withdraws what they could no longer grant', async () => {
  // An admin's invitations go when they become a deployer.
  const admin = await person('admin');
  const viewerLink = await invite(admin.client, { role: 'viewer' });
  assert.equal(await opens(viewerLink.token), 200);
  assert.equal((await owner.req('PATCH', `/api/operators/${admin.id}`, { role: 'deployer' })).status, 200);
  assert.equal(await opens(viewerLink.token), 404);
  const late = await new Client(s.url).req('POST', `/api/invitations/${viewerLink.token}/accept`, {
    username: uniq('late'),
    password: PASSWORD,
  });
  assert.equal(late.status, 404, late.text);
  const listed = (await owner.req('GET', '/api/operators/invitations')).body.items.map((i: any) => i.id);
  assert.ok(!listed.includes(viewerLink.id), 'withdrawn, not left pending');

  // An owner demoted to admin: their owner invitation and reset links go, their admin invitation stays.
  const second = await person('owner');
  const ownerLink = await invite(second.client, { role: 'owner' });
  const adminLink = await invite(second.client, { role: 'admin' });
  const target = await person('viewer');
  const reset = await second.client.req('POST', `/api/operators/${target.id}/reset`);
  assert.equal(reset.status, 201, reset.text);
  assert.equal((await owner.req('PATCH', `/api/operators/${second.id}`, { role: 'admin' })).status, 200);
  assert.equal(await opens(ownerLink.token), 404);
  assert.equal(await opens(linkToken(reset.body.invitation.url)), 404);
  assert.equal(await opens(adminLink.token), 200);

  // Disabled, then deleted.
  const third = await person('admin');
  const a = await invite(third.client, { role: 'deployer' });
  assert.equal((await owner.req('PATCH', `/api/operators/${third.id}`, { disabled: true })).status, 200);
  assert.equal(await opens(a.token), 404);
  const fourth = await person('admin');
  const b = await invite(fourth.client, { role: 'viewer' });
  assert.equal((await owner.req('DELETE', `/api/operators/${fourth.id}`)).status, 204);
  assert.equal(await opens(b.token), 404);
});

test('the accept checks the creator again: a role changed elsewhere (the identity provider) still withdraws', async () => {
  const admin = await person('admin');
  const link = await invite(admin.client, { role: 'admin' });
  // As the identity provider's claims would: the row changes without operator management.
  await s.env.db.updateTable('users').set({ role: 'viewer' }).where('id', '=', admin.id).execute();
  invalidateCredentials();
  assert.equal(await opens(link.token), 404);
  const r = await new Client(s.url).req('POST', `/api/invitations/${link.token}/accept`, {
    username: uniq('nope'),
    password: PASSWORD,
  });
  assert.equal(r.status, 404, r.text);
  await s.env.db.updateTable('users').set({ role: 'admin' }).where('id', '=', admin.id).execute();
  invalidateCredentials();
  assert.equal(await opens(link.token), 200, 'the link was not consumed by the refusal');
});

test('an admin never reaches the owner role: not for themself, not by invitation, not by resetting an owner', async () => {
  const admin = await person('admin');
  const self = await admin.client.req('PATCH', `/api/operators/${admin.id}`, { role: 'owner' });
  assert.equal(self.status, 403, self.text);
  assert.equal((await admin.client.req('POST', '/api/operators/invitations', { role: 'owner' })).status, 403);
  const ownerId = (await owner.req('GET', '/api/auth/me')).body.user.id;
  assert.equal((await admin.client.req('POST', `/api/operators/${ownerId}/reset`)).status, 403);
  assert.equal((await admin.client.req('PATCH', `/api/operators/${ownerId}`, { app_ids: null })).status, 403);
  // An admin's own token with every scope is no different.
  const t = await team.tokenOf(admin.id, { scopes: null, appIds: null }, { stepUp: true });
  assert.equal((await t.req('PATCH', `/api/operators/${admin.id}`, { role: 'owner' })).status, 403);
  const row = await s.env.db
    .selectFrom('users')
    .select('role')
    .where('id', '=', admin.id)
    .executeTakeFirstOrThrow();
  assert.equal(row.role, 'admin');
});

test('accepting with a planted session cookie starts a new session and ends the planted one', async () => {
  const attacker = await person('viewer');
  const planted = attacker.client.cookies.get('svc_session')!;
  const link = await invite(owner, { role: 'deployer' });
  const victim = new Client(s.url);
  victim.cookies.set('svc_session', planted);
  const r = await victim.req('POST', `/api/invitations/${link.token}/accept`, {
    username: uniq('victim'),
    password: PASSWORD,
  });
  assert.equal(r.status, 201, r.text);
  assert.notEqual(victim.cookies.get('svc_session'), planted, 'a fresh session id');
  assert.equal((await victim.req('GET', '/api/auth/me')).body.user.role, 'deployer');
  // The planted session is ended by the sign-in, never carried over to the new operator.
  assert.equal((await attacker.client.req('GET', '/api/auth/me')).status, 401);
});

test('CSRF: a cross-site accept and a cookie-backed invitation without the CSRF header are refused', async () => {
  const link = await invite(owner, { role: 'viewer' });
  const cross = await new Client(s.url).req(
    'POST',
    `/api/invitations/${link.token}/accept`,
    { username: uniq('x'), password: PASSWORD },
    { 'sec-fetch-site': 'cross-site' },
  );
  assert.equal(cross.status, 403, cross.text);
  assert.equal(cross.body.code, 'csrf_mismatch');
  assert.equal(await opens(link.token), 200, 'not consumed');
  const admin = await person('admin');
  const noHeader = await admin.client.req(
    'POST',
    '/api/operators/invitations',
    { role: 'viewer' },
    { 'x-csrf-token': '' },
  );
  assert.equal(noHeader.status, 403, noHeader.text);
  assert.equal(noHeader.body.code, 'csrf_mismatch');
});

test('unknown, malformed, used and expired links answer one identical 404', async () => {
  const used = await invite(owner, { role: 'viewer' });
  assert.equal(
    (
      await new Client(s.url).req('POST', `/api/invitations/${used.token}/accept`, {
        username: uniq('u'),
        password: PASSWORD,
      })
    ).status,
    201,
  );
  const expired = await invite(owner, { role: 'viewer', expires_in_hours: 1 });
  await s.env.db
    .updateTable('invitations')
    .set({ expires_at: new Date(Date.now() - 1000).toISOString() })
    .where('id', '=', expired.id)
    .execute();
  const answers = [];
  for (const t of ['A'.repeat(43), 'short', used.token, expired.token]) {
    const r = await new Client(s.url).req('GET', `/api/invitations/${t}`);
    answers.push([r.status, r.text]);
  }
  assert.equal(new Set(answers.map((a) => JSON.stringify(a))).size, 1, JSON.stringify(answers));
  assert.equal(answers[0]![0], 404);
});

test('the audit hides every entry about another app from a limited reader, background ones too', async () => {
  const dom = await postDomain(owner, 'rev-b.example.com', appB);
  assert.equal(dom.status, 201, dom.text);
  // A background entry that names app B only as its target.
  await recordAudit(s.env.db, {
    route: 'POST /api/internal/probe',
    target: appB,
    appId: null,
    outcome: 200,
    event: 'probe.done',
  });
  // An instance-wide entry that lists app B among others: the list is cut to what the reader reaches.
  await invite(owner, { role: 'viewer', app_ids: [appA, appB] });
  const viewer = await person('viewer', [appA]);
  const seen = (await viewer.client.req('GET', '/api/audit?limit=200')).body.items;
  const invited = seen.find((e: any) => e.event === 'operator.invited' && e.detail?.app_ids?.includes(appA));
  assert.deepEqual(invited.detail.app_ids, [appA]);
  const about = (e: any) =>
    e.app_id === appB ||
    e.target.id === appB ||
    e.target.id === dom.body.domain.id ||
    JSON.stringify(e.detail ?? {}).includes(appB);
  assert.deepEqual(seen.filter(about), [], 'nothing about app B');
  assert.ok(seen.length > 0, 'instance entries stay');
  const all = (await owner.req('GET', '/api/audit?limit=200')).body.items;
  const created = all.find((e: any) => e.event === 'domain.created' && e.target.id === dom.body.domain.id);
  assert.equal(created.app_id, appB, 'the domain entry names its app');
  assert.ok(all.some((e: any) => e.event === 'app.created' && e.app_id === appB));
  const probe = all.find((e: any) => e.event === 'probe.done');
  assert.equal((await viewer.client.req('GET', `/api/audit/${probe.id}/diff`)).status, 404, 'by id too');
});

test('the traffic snapshot shows a limited reader only the requests to their apps', async () => {
  assert.ok(s.env.monitor, 'the monitor runs in tests');
  await insertDomainRow(s.env, 'd' + 'b'.repeat(25), 'only-a.example.com', appA);
  const at = Date.now();
  for (const host of ['only-a.example.com', 'secret-b.example.com', 'svc.example.com']) {
    s.env.monitor!.observe({
      at,
      ip: '192.0.2.7',
      host,
      method: 'GET',
      path: '/',
      status: 200,
      bytes: 0,
      durationMs: 0,
    });
  }
  const viewer = await person('viewer', [appA]);
  const mine = (await viewer.client.req('GET', '/api/security/traffic')).body.recent_requests.map(
    (r: any) => r.host,
  );
  assert.deepEqual([...new Set(mine)], ['only-a.example.com']);
  const everyone = (await owner.req('GET', '/api/security/traffic')).body.recent_requests.map(
    (r: any) => r.host,
  );
  assert.ok(everyone.includes('secret-b.example.com'));
});
