// Scoped API tokens, in-process: a token asks only for what its creator holds (scopes
// and apps), the listing shows scopes, apps and last use, and a use of the token is recorded.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, Client, ADMIN } from '../../_support/server.js';
import { startTestApp, MIN_PASSWORD_COST, type TestApp } from '../../_support/request.js';
import { insertUser } from '#lib/auth/users-store.js';
import { hashPassword } from '#lib/auth/passwords.js';

let s: TestApp;
let admin: Client;
let appA: string;
let appB: string;

const VIEWER = { username: 'vera', password: 'a viewer with a long password' };
const DEPLOYER = { username: 'dora', password: 'a deployer with a long password' };

/** Signs an operator in and steps up (minting a token needs a recent one). */
async function signedIn(who: { username: string; password: string }): Promise<Client> {
  const c = new Client(s.url);
  const r = await c.req('POST', '/api/auth/login', who);
  assert.equal(r.status, 200, r.text);
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: who.password })).status, 200);
  return c;
}

before(async () => {
  s = await startTestApp();
  admin = await adminClient(s);
  for (const name of ['scoped-a', 'scoped-b']) {
    const r = await admin.req('POST', '/api/apps', { name, source: { type: 'image', image: 'nginx:1.27' } });
    assert.equal(r.status, 201, r.text);
  }
  const apps = (await admin.req('GET', '/api/apps')).body.items as Array<{ id: string; name: string }>;
  appA = apps.find((a) => a.name === 'scoped-a')!.id;
  appB = apps.find((a) => a.name === 'scoped-b')!.id;
  // The app's own cost: the login below verifies these hashes.
  await insertUser(s.env.db, VIEWER.username, await hashPassword(VIEWER.password, MIN_PASSWORD_COST), {
    role: 'viewer',
  });
  await insertUser(s.env.db, DEPLOYER.username, await hashPassword(DEPLOYER.password, MIN_PASSWORD_COST), {
    role: 'deployer',
    appIds: [appA],
  });
});
after(async () => {
  await s.stop();
});

test('a viewer asking for a scope it lacks gets 400 naming it; nothing is stored; its own scopes are accepted', async () => {
  const viewer = await signedIn(VIEWER);
  const r = await viewer.req('POST', '/api/auth/api-tokens', {
    name: 'too-wide',
    scopes: ['app.read', 'app.deploy'],
  });
  assert.equal(r.status, 400);
  assert.equal(r.body.code, 'bad_request');
  assert.match(r.body.error, /"app\.deploy"/);
  assert.doesNotMatch(r.body.error, /"app\.read"/);
  assert.equal(r.body.details[0].field, 'scopes');
  assert.deepEqual((await viewer.req('GET', '/api/auth/api-tokens')).body.items, []);
  const unknown = await viewer.req('POST', '/api/auth/api-tokens', { name: 'bogus', scopes: ['root'] });
  assert.equal(unknown.status, 400);
  const ok = await viewer.req('POST', '/api/auth/api-tokens', {
    name: 'reader',
    scopes: ['instance.read', 'app.read', 'app.read'],
  });
  assert.equal(ok.status, 201, ok.text);
  assert.deepEqual(ok.body.scopes, ['app.read', 'instance.read']);
  assert.equal(ok.body.app_ids, null);
});

test('apps: unknown ids and apps outside a limited creator get the same 400; apps within are stored', async () => {
  const deployer = await signedIn(DEPLOYER);
  const outside = await deployer.req('POST', '/api/auth/api-tokens', { name: 'b', app_ids: [appB] });
  const missing = await deployer.req('POST', '/api/auth/api-tokens', { name: 'x', app_ids: ['no-such-app'] });
  assert.equal(outside.status, 400);
  assert.equal(missing.status, 400);
  assert.equal(outside.body.details[0].field, 'app_ids');
  // The same sentence shape: a 400 must not reveal that an app outside the list exists.
  assert.equal(outside.body.error.replace(appB, 'X'), missing.body.error.replace('no-such-app', 'X'));
  const within = await deployer.req('POST', '/api/auth/api-tokens', {
    name: 'a-only',
    scopes: ['app.deploy'],
    app_ids: [appA],
  });
  assert.equal(within.status, 201, within.text);
  assert.deepEqual(within.body.app_ids, [appA]);
  // An admin (every app) may name any existing app.
  assert.equal(
    (await admin.req('POST', '/api/auth/api-tokens', { name: 'b-only', app_ids: [appB] })).status,
    403,
  ); // no step-up yet
  assert.equal((await admin.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const b = await admin.req('POST', '/api/auth/api-tokens', { name: 'b-only', app_ids: [appB] });
  assert.equal(b.status, 201, b.text);
});

test('a scoped token never mints a wider one; omitted scopes inherit its own', async () => {
  const viewer = await signedIn(VIEWER);
  // self.manage lets the token manage tokens at all; what it may grant stays within its own scopes.
  const made = await viewer.req('POST', '/api/auth/api-tokens', {
    name: 'narrow',
    scopes: ['app.read', 'self.manage'],
  });
  const bot = new Client(s.url);
  bot.bearer = made.body.token;
  assert.equal((await bot.req('POST', '/api/auth/step-up', { password: VIEWER.password })).status, 200);
  const wider = await bot.req('POST', '/api/auth/api-tokens', { name: 'wider', scopes: ['instance.read'] });
  assert.equal(wider.status, 400);
  assert.match(wider.body.error, /"instance\.read"/);
  const child = await bot.req('POST', '/api/auth/api-tokens', { name: 'child' });
  assert.equal(child.status, 201, child.text);
  assert.deepEqual([...child.body.scopes].sort(), ['app.read', 'self.manage']);
});

test('listing: scopes, app_ids and last_used_at, which a use of the token sets', async () => {
  const viewer = await signedIn(VIEWER);
  const made = await viewer.req('POST', '/api/auth/api-tokens', { name: 'used-later', scopes: ['app.read'] });
  const row = () =>
    viewer
      .req('GET', '/api/auth/api-tokens')
      .then((r) => r.body.items.find((t: any) => t.id === made.body.id));
  const before = await row();
  assert.deepEqual(Object.keys(before).sort(), [
    'app_ids',
    'created_at',
    'expires_at',
    'id',
    'last_used_at',
    'name',
    'scopes',
  ]);
  assert.deepEqual(before.scopes, ['app.read']);
  assert.equal(before.app_ids, null);
  assert.equal(before.last_used_at, null);
  assert.equal(JSON.stringify(before).includes(made.body.token), false);
  const bot = new Client(s.url);
  bot.bearer = made.body.token;
  assert.equal((await bot.req('GET', '/api/auth/me')).status, 200);
  const after = await row();
  assert.ok(
    after.last_used_at !== null && Date.parse(after.last_used_at) >= Date.parse(made.body.created_at),
  );
});
