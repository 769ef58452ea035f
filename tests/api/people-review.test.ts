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
import { insertUser } from '#lib/auth/users.js';
import { createSession, csrfFor } from '#lib/auth/sessions.js';
import { createApiToken } from '#lib/auth/tokens.js';
import { invalidateCredentials } from '#lib/auth/cache.js';
import { recordAudit } from '#lib/audit/index.js';
import type { Role } from '#lib/auth/roles.js';

let s: TestApp;
let owner: Client;
let appA: string;
let appB: string;
let n = 0;
const uniq = (p: string) => `${p}${++n}`;
const PASSWORD = 'a long enough passphrase';
const LINK = /\/invite\/([A-Za-z0-9_-]{43})$/;
const LIMITS = { idleSeconds: 3600, maxSeconds: 3600 };
const soon = () => new Date(Date.now() + 120_000).toISOString();

interface Person {
  id: string;
  /** A session, stepped up. */
  c: Client;
}

/** An operator with a stepped-up session (the password is never used: sessions are made directly). */
async function person(role: Role, appIds: string[] | null = null): Promise<Person> {
  const user = await insertUser(s.env.db, uniq(role), 'scrypt$10$8$1$x$y', { role, appIds });
  const session = await createSession(s.env.db, user.id, { ip: null, userAgent: null }, LIMITS);
  await s.env.db
    .updateTable('sessions')
    .set({ step_up_until: soon() })
    .where('user_id', '=', user.id)
    .execute();
  invalidateCredentials();
  const c = new Client(s.url);
  c.cookies.set('svc_session', session.raw);
  c.cookies.set('svc_csrf', csrfFor(s.env.signingKey, session.raw));
  return { id: user.id, c };
}

/** A bearer client for a new token of `userId`, stepped up. */
async function tokenOf(
  userId: string,
  grant: { scopes: string[] | null; appIds: string[] | null },
): Promise<Client> {
  const t = await createApiToken(s.env.db, userId, uniq('tok'), null, Date.now(), grant as never);
  await s.env.db.updateTable('api_tokens').set({ step_up_until: soon() }).where('id', '=', t.id).execute();
  invalidateCredentials();
  return Object.assign(new Client(s.url), { bearer: t.token });
}

const linkToken = (url: string) => LINK.exec(url)![1]!;

async function invite(
  by: Client,
  body: Record<string, unknown>,
): Promise<{ id: string; token: string; url: string }> {
  const r = await by.req('POST', '/api/operators/invitations', body);
  assert.equal(r.status, 201, r.text);
  return { id: r.body.invitation.id, token: linkToken(r.body.invitation.url), url: r.body.invitation.url };
}

const opens = async (token: string) =>
  (await new Client(s.url).req('GET', `/api/invitations/${token}`)).status;

before(async () => {
  s = await startTestApp();
  owner = await adminClient(s);
  assert.equal((await owner.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  for (const name of ['rev-a', 'rev-b'])
    assert.equal(
      (await owner.req('POST', '/api/apps', { name, source: { type: 'image', image: 'nginx:1.27' } })).status,
      201,
    );
  const apps = (await owner.req('GET', '/api/apps')).body.items as Array<{ id: string; name: string }>;
  appA = apps.find((a) => a.name === 'rev-a')!.id;
  appB = apps.find((a) => a.name === 'rev-b')!.id;
});

after(async () => {
  await s?.stop();
});

test('an admin token limited to app A cannot act outside A: no new app, import, add-on, redirect or instance change', async () => {
  const admin = await person('admin');
  const t = await tokenOf(admin.id, { scopes: null, appIds: [appA] });
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
  const other = await t.req('POST', '/api/domains', {
    hostname: 'b.example.com',
    app_id: appB,
    service: 'web',
    port: 80,
  });
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
  const made = await admin.c.req('POST', '/api/apps', {
    name: uniq('free'),
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(made.status, 201, made.text);
  assert.equal((await owner.req('DELETE', `/api/apps/${made.body.app.id}`)).status < 300, true);
});

test('a token never mints a wider one: no other app, no instance permission next to an app list', async () => {
  const admin = await person('admin');
  const t = await tokenOf(admin.id, { scopes: null, appIds: [appA] });
  const wider = await t.req('POST', '/api/auth/api-tokens', { name: 'b', app_ids: [appB] });
  assert.equal(wider.status, 400, wider.text);
  const instance = await t.req('POST', '/api/auth/api-tokens', { name: 'ops', scopes: ['operators.manage'] });
  assert.equal(instance.status, 400, instance.text);
  assert.equal(instance.body.details[0].field, 'scopes');
  const child = await t.req('POST', '/api/auth/api-tokens', { name: 'child' });
  assert.equal(child.status, 201, child.text);
  assert.deepEqual(child.body.app_ids, [appA], 'the limit is inherited');
  const mixed = await admin.c.req('POST', '/api/auth/api-tokens', {
    name: 'mixed',
    scopes: ['instance.admin'],
    app_ids: [appA],
  });
  assert.equal(mixed.status, 400, mixed.text);
});

test('links outlive nothing: demoting, disabling or deleting their creator withdraws what they could no longer grant', async () => {
  // An admin's invitations go when they become a deployer.
  const admin = await person('admin');
  const viewerLink = await invite(admin.c, { role: 'viewer' });
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
  const ownerLink = await invite(second.c, { role: 'owner' });
  const adminLink = await invite(second.c, { role: 'admin' });
  const target = await person('viewer');
  const reset = await second.c.req('POST', `/api/operators/${target.id}/reset`);
  assert.equal(reset.status, 201, reset.text);
  assert.equal((await owner.req('PATCH', `/api/operators/${second.id}`, { role: 'admin' })).status, 200);
  assert.equal(await opens(ownerLink.token), 404);
  assert.equal(await opens(linkToken(reset.body.invitation.url)), 404);
  assert.equal(await opens(adminLink.token), 200);

  // Disabled, then deleted.
  const third = await person('admin');
  const a = await invite(third.c, { role: 'deployer' });
  assert.equal((await owner.req('PATCH', `/api/operators/${third.id}`, { disabled: true })).status, 200);
  assert.equal(await opens(a.token), 404);
  const fourth = await person('admin');
  const b = await invite(fourth.c, { role: 'viewer' });
  assert.equal((await owner.req('DELETE', `/api/operators/${fourth.id}`)).status, 204);
  assert.equal(await opens(b.token), 404);
});

test('the accept checks the creator again: a role changed elsewhere (the identity provider) still withdraws', async () => {
  const admin = await person('admin');
  const link = await invite(admin.c, { role: 'admin' });
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
  const self = await admin.c.req('PATCH', `/api/operators/${admin.id}`, { role: 'owner' });
  assert.equal(self.status, 403, self.text);
  assert.equal((await admin.c.req('POST', '/api/operators/invitations', { role: 'owner' })).status, 403);
  const ownerId = (await owner.req('GET', '/api/auth/me')).body.user.id;
  assert.equal((await admin.c.req('POST', `/api/operators/${ownerId}/reset`)).status, 403);
  assert.equal((await admin.c.req('PATCH', `/api/operators/${ownerId}`, { app_ids: null })).status, 403);
  // An admin's own token with every scope is no different.
  const t = await tokenOf(admin.id, { scopes: null, appIds: null });
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
  const planted = attacker.c.cookies.get('svc_session')!;
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
  assert.equal((await attacker.c.req('GET', '/api/auth/me')).status, 401);
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
  const noHeader = await admin.c.req(
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
  const dom = await owner.req('POST', '/api/domains', {
    hostname: 'rev-b.example.com',
    app_id: appB,
    service: 'web',
    port: 80,
  });
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
  const seen = (await viewer.c.req('GET', '/api/audit?limit=200')).body.items;
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
  assert.equal((await viewer.c.req('GET', `/api/audit/${probe.id}/diff`)).status, 404, 'by id too');
});

test('the traffic snapshot shows a limited reader only the requests to their apps', async () => {
  assert.ok(s.env.monitor, 'the monitor runs in tests');
  await s.env.db
    .insertInto('domains')
    .values({
      id: 'd' + 'b'.repeat(25),
      hostname: 'only-a.example.com',
      app_id: appA,
      service: 'web',
      port: 80,
      redirect_to: null,
      created_at: new Date().toISOString(),
      updated_at: new Date().toISOString(),
    })
    .execute();
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
  const mine = (await viewer.c.req('GET', '/api/security/traffic')).body.recent_requests.map(
    (r: any) => r.host,
  );
  assert.deepEqual([...new Set(mine)], ['only-a.example.com']);
  const everyone = (await owner.req('GET', '/api/security/traffic')).body.recent_requests.map(
    (r: any) => r.host,
  );
  assert.ok(everyone.includes('secret-b.example.com'));
});
