// Sign-in with an OpenID Connect provider, end to end: the control plane in-process, a real
// oidc-provider on loopback (PKCE required, accounts whose claims the tests set), the provider's own
// login and consent pages walked over HTTP with a cookie jar per origin, like a browser; the
// browser's hops to the control plane go straight into its dispatcher (tests/_support/transport.ts).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, Client, ADMIN } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { testFetch } from '../../_support/transport.js';
import {
  startOidcProvider,
  signInOverHttp,
  CookieJar,
  type Hop,
  type TestProvider,
} from '../../_support/oidc-provider.js';
import { loadConfig, ConfigError } from '#lib/config.js';
import { roleFromClaim } from '#lib/auth/oidc.js';

// The provider registers the callback before the app exists: each app gets a base URL named here.
let origins = 0;
const origin = () => `http://127.0.250.${++origins}:1`;

const ROLE_MAP = { 'ops-admins': 'admin', 'ops-deploy': 'deployer', 'ops-view': 'viewer' } as const;

let s: TestApp;
let idp: TestProvider;
let base: string;
let admin: Client;

before(async () => {
  base = origin();
  idp = await startOidcProvider(`${base}/api/auth/oidc/callback`);
  s = await startTestApp(
    {
      SVC_PUBLIC_URL: base,
      SVC_OIDC_ISSUER: idp.issuer,
      SVC_OIDC_CLIENT_ID: idp.clientId,
      SVC_OIDC_CLIENT_SECRET: idp.clientSecret,
      SVC_OIDC_ROLE_MAP: JSON.stringify(ROLE_MAP),
    },
    { url: base },
  );
  admin = await adminClient(s);
});

after(async () => {
  await s?.stop();
  await idp?.stop();
});

const last = (hops: Hop[]) => hops[hops.length - 1]!;
const userRows = () => s.env.db.selectFrom('users').selectAll().execute();
const bySubject = (account: string) =>
  s.env.db
    .selectFrom('users')
    .selectAll()
    .where('sso_subject', '=', `${idp.issuer} ${account}`)
    .executeTakeFirst();
const auditOf = async (event: string) =>
  (
    await s.env.db.selectFrom('audit').selectAll().where('action', '=', event).orderBy('id', 'desc').execute()
  ).map((r) => ({ ...r, detail: r.detail ? JSON.parse(r.detail) : null }));

/** A client of the control plane holding the browser's cookies for it. */
function apiClient(jar: CookieJar): Client {
  const c = new Client(base);
  for (const [k, v] of jar.entries(base)) c.cookies.set(k, v);
  return c;
}

test('setup status tells the dashboard a provider is offered, and its name', async () => {
  const r = await new Client(base).req('GET', '/api/setup/status');
  assert.deepEqual(r.body, { open: false, oidc: true, oidc_name: new URL(idp.issuer).host });
});

test('start: a redirect to the provider with PKCE (S256), state and nonce, and an HttpOnly flow cookie', async () => {
  const r = await testFetch(`${base}/api/auth/oidc/start`, { redirect: 'manual' });
  assert.equal(r.status, 302);
  const to = new URL(r.headers.get('location')!);
  assert.equal(to.origin, idp.issuer);
  assert.equal(to.searchParams.get('redirect_uri'), `${base}/api/auth/oidc/callback`);
  assert.equal(to.searchParams.get('code_challenge_method'), 'S256');
  assert.match(to.searchParams.get('code_challenge')!, /^[A-Za-z0-9_-]{43}$/);
  assert.ok(to.searchParams.get('state') && to.searchParams.get('nonce'));
  assert.equal(to.searchParams.get('max_age'), null);
  const cookie = r.headers.getSetCookie().find((c) => c.startsWith('svc_oidc='))!;
  assert.match(cookie, /HttpOnly/);
  assert.match(cookie, /Path=\/api\/auth\/oidc/);
  // Nothing of the flow is readable in it (encrypted): not the verifier, not the state.
  assert.ok(!decodeURIComponent(cookie).includes(to.searchParams.get('state')!));
  // A return path to another site is refused.
  assert.equal(
    (await testFetch(`${base}/api/auth/oidc/start?return_to=//evil.example/`, { redirect: 'manual' })).status,
    400,
  );
});

test('a mapped person signs in: a new operator with the highest mapped role, no password, session cookies and 302 /', async () => {
  idp.accounts.set('alice', {
    preferred_username: 'alice',
    email: 'alice@example.org',
    groups: ['ops-view', 'ops-deploy', 'unrelated'],
  });
  const jar = new CookieJar();
  const hops = await signInOverHttp(jar, `${base}/api/auth/oidc/start`, 'alice');
  const end = last(hops);
  assert.equal(end.status, 302, end.body);
  assert.equal(end.location, '/');
  assert.ok(jar.get(base, 'svc_session') && jar.get(base, 'svc_csrf'));
  assert.equal(jar.get(base, 'svc_oidc'), undefined, 'the flow cookie is spent');
  const me = await apiClient(jar).req('GET', '/api/auth/me');
  assert.equal(me.status, 200);
  assert.equal(me.body.user.username, 'alice');
  assert.equal(me.body.user.sso, true);
  const row = (await bySubject('alice'))!;
  assert.equal(row.role, 'deployer');
  assert.equal(row.app_ids, null);
  assert.ok(row.last_login_at);
  assert.ok(!row.password_hash.startsWith('scrypt$'), 'no usable password hash');
  const [entry] = await auditOf('auth.login');
  assert.equal(entry!.via, 'oidc');
  assert.equal(entry!.actor_id, row.id);
  assert.deepEqual(entry!.detail, { role: 'deployer', created: true });
  // Such a person has no password: password login and password step-up refuse cleanly.
  const pw = await new Client(base).req('POST', '/api/auth/login', { username: 'alice', password: '!sso' });
  assert.equal(pw.status, 401);
  assert.equal(pw.body.code, 'invalid_credentials');
  const up = await apiClient(jar).req('POST', '/api/auth/step-up', { password: 'anything at all' });
  assert.equal(up.status, 403);
  assert.match(up.body.error, /oidc\/start\?step_up=1/);
  const change = await apiClient(jar).req('POST', '/api/auth/password', {
    current_password: '!sso',
    new_password: 'a new long passphrase',
  });
  assert.equal(change.status, 403);
});

test('a username already taken gets a suffix; the password operator of that name is untouched', async () => {
  idp.accounts.set('other-admin', { preferred_username: ADMIN.username, groups: 'ops-view' });
  const hops = await signInOverHttp(new CookieJar(), `${base}/api/auth/oidc/start`, 'other-admin');
  assert.equal(last(hops).status, 302, last(hops).body);
  const row = (await bySubject('other-admin'))!;
  assert.equal(row.username, `${ADMIN.username}-2`);
  assert.equal(row.role, 'viewer');
  assert.equal((await new Client(base).req('POST', '/api/auth/login', ADMIN)).status, 200);
});

test('a derived username that differs only in case from one taken gets a suffix too (usernames ignore case)', async () => {
  idp.accounts.set('upper-admin', { preferred_username: ADMIN.username.toUpperCase(), groups: 'ops-view' });
  const hops = await signInOverHttp(new CookieJar(), `${base}/api/auth/oidc/start`, 'upper-admin');
  assert.equal(last(hops).status, 302, last(hops).body);
  const row = (await bySubject('upper-admin'))!;
  // admin and admin-2 are taken (the test above): ADMIN-3, never a second "admin".
  assert.equal(row.username, `${ADMIN.username.toUpperCase()}-3`);
  const same = (await userRows()).filter((u) => u.username.toLowerCase() === ADMIN.username);
  assert.equal(same.length, 1, 'one operator answers to the name');
});

test('an unmapped person is refused (403) and nothing is created', async () => {
  idp.accounts.set('mallory', { preferred_username: 'mallory', groups: ['contractors'] });
  idp.accounts.set('nobody', { preferred_username: 'nobody' });
  for (const account of ['mallory', 'nobody']) {
    const before = (await userRows()).length;
    const jar = new CookieJar();
    const end = last(await signInOverHttp(jar, `${base}/api/auth/oidc/start`, account));
    assert.equal(end.status, 403, end.body);
    assert.equal(JSON.parse(end.body).code, 'forbidden');
    assert.equal((await userRows()).length, before);
    assert.equal(await bySubject(account), undefined);
    assert.equal(jar.get(base, 'svc_session'), undefined);
  }
  const [refused] = await auditOf('auth.oidc_refused');
  assert.equal(refused!.actor, 'nobody');
  assert.equal(refused!.outcome, 403);
});

test('the role follows the claims at every sign-in; an app list set by an operator stays', async () => {
  const id = (await bySubject('alice'))!.id;
  await s.env.db.updateTable('users').set({ app_ids: '["app-1"]' }).where('id', '=', id).execute();
  idp.accounts.set('alice', { preferred_username: 'alice', groups: ['ops-admins'] });
  const end = last(await signInOverHttp(new CookieJar(), `${base}/api/auth/oidc/start`, 'alice'));
  assert.equal(end.status, 302, end.body);
  const row = (await bySubject('alice'))!;
  assert.equal(row.id, id, 'the same operator');
  assert.equal(row.role, 'admin');
  assert.equal(row.app_ids, '["app-1"]');
  const [entry] = await auditOf('auth.login');
  assert.deepEqual(entry!.detail, { role: 'admin', previous_role: 'deployer' });
  // Back down to viewer at the next sign-in.
  idp.accounts.set('alice', { preferred_username: 'alice', groups: ['ops-view'] });
  assert.equal(
    last(await signInOverHttp(new CookieJar(), `${base}/api/auth/oidc/start`, 'alice')).status,
    302,
  );
  assert.equal((await bySubject('alice'))!.role, 'viewer');
  await s.env.db.updateTable('users').set({ app_ids: null }).where('id', '=', id).execute();
});

test('a tampered state, a callback without this browser flow, and a replayed callback are refused', async () => {
  const count = (await userRows()).length;
  const jar = new CookieJar();
  let callback: URL | null = null;
  const tampered = last(
    await signInOverHttp(jar, `${base}/api/auth/oidc/start`, 'alice', (u) => {
      callback = new URL(u);
      const t = new URL(u);
      t.searchParams.set('state', t.searchParams.get('state')!.slice(0, -2) + 'xx');
      return t;
    }),
  );
  assert.equal(tampered.status, 403, tampered.body);
  assert.match(JSON.parse(tampered.body).error, /state/);
  assert.equal(jar.get(base, 'svc_session'), undefined);
  // The untouched callback, in a browser that never started this flow (login CSRF): refused.
  const foreign = await testFetch(String(callback!), { redirect: 'manual' });
  assert.equal(foreign.status, 403);
  assert.equal(
    foreign.headers.getSetCookie().some((c) => c.startsWith('svc_session=')),
    false,
  );
  // A good sign-in, then its callback replayed with the same (spent) flow cookie: the code is used up.
  const jar2 = new CookieJar();
  let good: URL | null = null;
  let flow = '';
  const ok = last(
    await signInOverHttp(jar2, `${base}/api/auth/oidc/start`, 'alice', (u) => {
      good = u;
      flow = jar2.get(base, 'svc_oidc')!;
      return u;
    }),
  );
  assert.equal(ok.status, 302, ok.body);
  const replay = await testFetch(String(good!), {
    redirect: 'manual',
    headers: { cookie: `svc_oidc=${flow}` },
  });
  assert.equal(replay.status, 403);
  assert.equal((await userRows()).length, count);
});

test('step-up: a fresh sign-in at the provider (max_age=0) marks the session, then the step-up routes pass', async () => {
  const jar = new CookieJar();
  assert.equal(last(await signInOverHttp(jar, `${base}/api/auth/oidc/start`, 'alice')).status, 302);
  const c = apiClient(jar);
  assert.equal(
    (await c.req('POST', '/api/auth/api-tokens', { name: 'before' })).body.code,
    'step_up_required',
  );
  // Without a session there is nothing to step up; a password operator steps up with a password.
  assert.equal(
    (await testFetch(`${base}/api/auth/oidc/start?step_up=1`, { redirect: 'manual' })).status,
    401,
  );
  const pwOp = await testFetch(`${base}/api/auth/oidc/start?step_up=1`, {
    redirect: 'manual',
    headers: { cookie: admin.cookieHeader() },
  });
  assert.equal(pwOp.status, 403);
  const asked = idp.maxAges.length;
  const hops = await signInOverHttp(jar, `${base}/api/auth/oidc/start?step_up=1&return_to=/tokens`, 'alice');
  const end = last(hops);
  assert.equal(end.status, 302, end.body);
  assert.equal(end.location, '/tokens');
  assert.deepEqual(idp.maxAges.slice(asked), ['0']);
  assert.ok(
    hops.some((h) => /name="prompt" value="login"/.test(h.body)),
    'the provider asked for the sign-in again although its session was live',
  );
  const c2 = apiClient(jar);
  assert.equal(
    c2.cookies.get('svc_session'),
    c.cookies.get('svc_session'),
    'the same session, not a new sign-in',
  );
  const t = await c2.req('POST', '/api/auth/api-tokens', { name: 'after' });
  assert.equal(t.status, 201, t.text);
  const [entry] = await auditOf('auth.step_up');
  assert.equal(entry!.via, 'oidc');
  assert.equal(entry!.actor, 'alice');
});

test('step-up as another person at the provider is refused and marks nothing', async () => {
  idp.accounts.set('bob', { preferred_username: 'bob', groups: ['ops-view'] });
  const jar = new CookieJar();
  assert.equal(last(await signInOverHttp(jar, `${base}/api/auth/oidc/start`, 'alice')).status, 302);
  const end = last(await signInOverHttp(jar, `${base}/api/auth/oidc/start?step_up=1`, 'bob'));
  assert.equal(end.status, 403, end.body);
  assert.equal(
    (await apiClient(jar).req('POST', '/api/auth/api-tokens', { name: 'no' })).body.code,
    'step_up_required',
  );
});

test('a disabled operator is refused, and claims that map to a higher role change nothing', async () => {
  const { id, role } = (await bySubject('alice'))!;
  const groups = idp.accounts.get('alice')!.groups;
  const sessions = async () =>
    (await s.env.db.selectFrom('sessions').select('id').where('user_id', '=', id).execute()).length;
  const before = await sessions();
  await s.env.db.updateTable('users').set({ disabled: 1, role: 'viewer' }).where('id', '=', id).execute();
  idp.accounts.set('alice', { ...idp.accounts.get('alice')!, groups: ['ops-admins'] });
  try {
    const end = last(await signInOverHttp(new CookieJar(), `${base}/api/auth/oidc/start`, 'alice'));
    assert.equal(end.status, 403, end.body);
    assert.match(JSON.parse(end.body).error, /disabled/);
    const row = (await bySubject('alice'))!;
    assert.deepEqual(
      [row.role, row.disabled],
      ['viewer', 1],
      'the refused sign-in neither promoted nor enabled them',
    );
    assert.equal(await sessions(), before, 'no session made');
  } finally {
    idp.accounts.set('alice', { ...idp.accounts.get('alice')!, groups });
    await s.env.db.updateTable('users').set({ disabled: 0, role }).where('id', '=', id).execute();
  }
});

test('claims only in the ID token are read there too', async () => {
  const url = origin();
  const p = await startOidcProvider(`${url}/api/auth/oidc/callback`, { claimsInIdToken: true });
  const s2 = await startTestApp(
    {
      SVC_PUBLIC_URL: url,
      SVC_OIDC_ISSUER: p.issuer,
      SVC_OIDC_CLIENT_ID: p.clientId,
      SVC_OIDC_CLIENT_SECRET: p.clientSecret,
      SVC_OIDC_ROLE_CLAIM: 'groups',
      SVC_OIDC_ROLE_MAP: JSON.stringify({ owners: 'owner' }),
    },
    { url },
  );
  try {
    p.accounts.set('carol', { email: 'carol+ops@example.org', groups: 'owners' });
    const end = last(await signInOverHttp(new CookieJar(), `${url}/api/auth/oidc/start`, 'carol'));
    assert.equal(end.status, 302, end.body);
    const row = await s2.env.db
      .selectFrom('users')
      .selectAll()
      .where('sso_subject', '=', `${p.issuer} carol`)
      .executeTakeFirst();
    assert.equal(row!.username, 'carol-ops@example.org');
    assert.equal(row!.role, 'owner');
  } finally {
    await s2.stop();
    await p.stop();
  }
});

test('without a provider the routes answer 404 and setup status says so', async () => {
  const plain = await startTestApp();
  try {
    assert.equal((await testFetch(`${plain.url}/api/auth/oidc/start`, { redirect: 'manual' })).status, 404);
    assert.equal(
      (await testFetch(`${plain.url}/api/auth/oidc/callback?code=x&state=y`, { redirect: 'manual' })).status,
      404,
    );
    assert.deepEqual((await new Client(plain.url).req('GET', '/api/setup/status')).body, {
      open: true,
      oidc: false,
    });
  } finally {
    await plain.stop();
  }
});

test('SVC_OIDC_*: all or nothing, the role map checked at boot with the variable named', () => {
  const good = {
    SVC_OIDC_ISSUER: 'https://id.example.org/realms/ops',
    SVC_OIDC_CLIENT_ID: 'svc',
    SVC_OIDC_CLIENT_SECRET: 's3cret',
    SVC_OIDC_ROLE_MAP: '{"ops":"admin"}',
  };
  const c = loadConfig(good).oidc!;
  assert.equal(c.issuer, good.SVC_OIDC_ISSUER);
  assert.equal(c.roleClaim, 'groups');
  assert.deepEqual({ ...c.roleMap }, { ops: 'admin' });
  assert.equal(c.name, 'id.example.org');
  assert.equal(loadConfig({}).oidc, null);
  const bad: Array<[Record<string, string>, string]> = [
    [{ ...good, SVC_OIDC_ROLE_MAP: 'not json' }, 'SVC_OIDC_ROLE_MAP'],
    [{ ...good, SVC_OIDC_ROLE_MAP: '["admin"]' }, 'SVC_OIDC_ROLE_MAP'],
    [{ ...good, SVC_OIDC_ROLE_MAP: '{"ops":"root"}' }, 'SVC_OIDC_ROLE_MAP'],
    [{ ...good, SVC_OIDC_ROLE_MAP: '{}' }, 'SVC_OIDC_ROLE_MAP'],
    [{ ...good, SVC_OIDC_CLIENT_SECRET: '' }, 'SVC_OIDC_CLIENT_SECRET'],
    [{ ...good, SVC_OIDC_ISSUER: 'http://id.example.org' }, 'SVC_OIDC_ISSUER'],
    [{ ...good, SVC_OIDC_ISSUER: 'not a url' }, 'SVC_OIDC_ISSUER'],
    [{ SVC_OIDC_CLIENT_ID: 'svc' }, 'SVC_OIDC_ISSUER'],
    [{ ...good, SVC_OIDC_SCOPES: 'profile email' }, 'SVC_OIDC_SCOPES'],
  ];
  for (const [vars, variable] of bad) {
    assert.throws(
      () => loadConfig(vars),
      (e: unknown) => e instanceof ConfigError && e.variable === variable,
      JSON.stringify(vars),
    );
  }
  // The message says what is wrong, and never echoes the secret.
  try {
    loadConfig({ ...good, SVC_OIDC_ROLE_MAP: '{"ops":"root"}' });
  } catch (e) {
    assert.match((e as Error).message, /owner, admin, deployer, viewer/);
    assert.ok(!(e as Error).message.includes('s3cret'));
  }
});

test('role from a claim: a string or a list, the highest mapped role wins, other types ignored', () => {
  const map = { a: 'viewer', b: 'admin', c: 'deployer' } as const;
  assert.equal(roleFromClaim('a', map), 'viewer');
  assert.equal(roleFromClaim(['a', 'c', 'b', 'x'], map), 'admin');
  assert.equal(roleFromClaim(['x', 1, null, { a: 1 }], map), null);
  assert.equal(roleFromClaim(undefined, map), null);
  assert.equal(roleFromClaim('toString', map), null, 'no inherited property counts as a mapping');
});
