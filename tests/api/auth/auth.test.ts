// End to end over the real server: real cookies, real bearer tokens, a real SQLite file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { stat } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, setupToken, ADMIN } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { totpCode } from '#lib/auth/totp.js';

let s: TestApp;
let admin: Client;

before(async () => {
  s = await startTestApp();
});
after(async () => {
  await s.stop();
});

test('setup: token file is private, wrong token is 403, right token creates the operator, then setup is closed (404)', async () => {
  const c = new Client(s.url);
  assert.deepEqual((await c.req('GET', '/api/setup/status')).body, { open: true, oidc: false });
  const st = await stat(join(s.dataDir, 'setup.token'));
  assert.equal(st.mode & 0o777, 0o600);
  const token = await setupToken(s);
  const wrong = await c.req('POST', '/api/setup/admin', { token: token + 'x', ...ADMIN });
  assert.equal(wrong.status, 403);
  assert.equal(wrong.body.code, 'forbidden');
  const short = await c.req('POST', '/api/setup/admin', { token, username: 'admin', password: 'short' });
  assert.equal(short.status, 400);
  assert.equal(short.body.details[0].field, 'password');
  const ok = await c.req('POST', '/api/setup/admin', { token, ...ADMIN });
  assert.equal(ok.status, 201);
  assert.equal(ok.body.user.username, 'admin');
  assert.equal(ok.body.user.totp_enabled, false);
  assert.equal(JSON.stringify(ok.body).includes('password'), false);
  assert.deepEqual((await c.req('GET', '/api/setup/status')).body, { open: false, oidc: false });
  const again = await c.req('POST', '/api/setup/admin', {
    token,
    username: 'other',
    password: 'another long password',
  });
  assert.equal(again.status, 404);
  await assert.rejects(stat(join(s.dataDir, 'setup.token')));
});

test('login: wrong password and unknown user get the same 401; success sets HttpOnly session and readable CSRF cookies', async () => {
  const c = new Client(s.url);
  const a = await c.req('POST', '/api/auth/login', { username: 'admin', password: 'nope nope nope' });
  const b = await c.req('POST', '/api/auth/login', { username: 'ghost', password: 'nope nope nope' });
  assert.equal(a.status, 401);
  assert.deepEqual(a.body, b.body);
  assert.equal(a.body.code, 'invalid_credentials');
  const r = await c.req('POST', '/api/auth/login', ADMIN);
  assert.equal(r.status, 200);
  const cookies = r.headers.getSetCookie();
  const session = cookies.find((x) => x.startsWith('svc_session='))!;
  const csrf = cookies.find((x) => x.startsWith('svc_csrf='))!;
  assert.match(session, /HttpOnly/);
  assert.match(session, /SameSite=Lax/);
  assert.match(session, /Path=\//);
  assert.doesNotMatch(session, /Secure/);
  assert.doesNotMatch(csrf, /HttpOnly/);
  assert.equal((await c.req('GET', '/api/auth/me')).body.via, 'session');
  admin = c;
  // Creating API tokens (below) needs a recent step-up.
  assert.equal((await admin.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
});

test('a login rotates the session: the old cookie stops working', async () => {
  const c = new Client(s.url);
  await c.req('POST', '/api/auth/login', ADMIN);
  const old = c.cookies.get('svc_session')!;
  await c.req('POST', '/api/auth/login', ADMIN);
  assert.notEqual(c.cookies.get('svc_session'), old);
  const stale = new Client(s.url);
  stale.cookies.set('svc_session', old);
  assert.equal((await stale.req('GET', '/api/auth/me')).status, 401);
});

test('login bad input: 1 MB password, wrong types, malformed JSON, oversized body', async () => {
  const c = new Client(s.url);
  const big = await c.req('POST', '/api/auth/login', { username: 'admin', password: 'x'.repeat(1_000_000) });
  assert.equal(big.status, 400);
  assert.equal(big.body.details[0].field, 'password');
  assert.equal((await c.req('POST', '/api/auth/login', { username: 1, password: [] })).status, 400);
  const bad = await c.req('POST', '/api/auth/login', '{"username": "admin",');
  assert.equal(bad.status, 400);
  assert.equal(bad.body.code, 'bad_request');
  const huge = await c.req(
    'POST',
    '/api/auth/login',
    JSON.stringify({ username: 'a', password: 'b', pad: 'x'.repeat(1_100_000) }),
  );
  assert.equal(huge.status, 413);
  assert.equal(huge.body.code, 'payload_too_large');
  assert.equal((await c.req('POST', '/api/auth/login', '')).status, 400);
});

test('CSRF: cookie-authenticated writes need the header of this very session', async () => {
  const r = await admin.req('POST', '/api/auth/api-tokens', { name: 'no-csrf' }, { 'x-csrf-token': '' });
  assert.equal(r.status, 403);
  assert.equal(r.body.code, 'csrf_mismatch');
  const other = new Client(s.url);
  await other.req('POST', '/api/auth/login', ADMIN);
  const foreign = await admin.req(
    'POST',
    '/api/auth/api-tokens',
    { name: 'x' },
    { 'x-csrf-token': other.cookies.get('svc_csrf')! },
  );
  assert.equal(foreign.status, 403);
  const cross = await admin.req(
    'POST',
    '/api/auth/api-tokens',
    { name: 'x' },
    { 'sec-fetch-site': 'cross-site' },
  );
  assert.equal(cross.status, 403);
  assert.equal(cross.body.code, 'csrf_mismatch');
  const ok = await admin.req('POST', '/api/auth/api-tokens', { name: 'with-csrf' });
  assert.equal(ok.status, 201);
});

test('API tokens: creating one needs a recent step-up, like the contract says', async () => {
  const c = new Client(s.url);
  await c.req('POST', '/api/auth/login', ADMIN);
  const denied = await c.req('POST', '/api/auth/api-tokens', { name: 'no-step-up' });
  assert.equal(denied.status, 403);
  assert.equal(denied.body.code, 'step_up_required');
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  assert.equal((await c.req('POST', '/api/auth/api-tokens', { name: 'after-step-up' })).status, 201);
});

test('API tokens: shown once, listed without value, bearer needs no CSRF, bearer beats cookies, revocation is immediate', async () => {
  const created = await admin.req('POST', '/api/auth/api-tokens', { name: 'ci' });
  assert.equal(created.status, 201);
  assert.match(created.body.token, /^svc_[A-Za-z0-9_-]{43}$/);
  const list = await admin.req('GET', '/api/auth/api-tokens');
  assert.ok(list.body.items.some((t: { id: string }) => t.id === created.body.id));
  assert.equal(JSON.stringify(list.body).includes(created.body.token), false);
  assert.equal(JSON.stringify(list.body).includes('svc_'), false);

  const bot = new Client(s.url);
  bot.bearer = created.body.token;
  assert.equal((await bot.req('GET', '/api/auth/me')).body.via, 'token');
  // A token is no way around the step-up: it needs its own.
  assert.equal((await bot.req('POST', '/api/auth/api-tokens', { name: 'from-bot' })).status, 403);
  assert.equal((await bot.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  assert.equal((await bot.req('POST', '/api/auth/api-tokens', { name: 'from-bot' })).status, 201);
  // RFC 9110: the scheme is case-insensitive.
  for (const scheme of ['bearer', 'BEARER', 'BeArEr']) {
    const r = await new Client(s.url).req('GET', '/api/auth/me', undefined, {
      authorization: `${scheme} ${created.body.token}`,
    });
    assert.equal(r.status, 200, scheme);
    assert.equal(r.body.via, 'token');
  }

  // An invalid bearer is 401 even beside a valid session cookie.
  const mixed = new Client(s.url);
  mixed.cookies = new Map(admin.cookies);
  mixed.bearer = 'svc_' + 'A'.repeat(43);
  assert.equal((await mixed.req('GET', '/api/auth/me')).status, 401);
  mixed.bearer = 'not-a-token';
  assert.equal((await mixed.req('GET', '/api/auth/me')).status, 401);
  assert.equal(
    (await admin.req('GET', '/api/auth/me', undefined, { authorization: 'Basic abc' })).status,
    401,
  );

  assert.equal((await admin.req('DELETE', `/api/auth/api-tokens/${created.body.id}`)).status, 204);
  assert.equal((await bot.req('GET', '/api/auth/me')).status, 401);
  assert.equal((await admin.req('DELETE', `/api/auth/api-tokens/${created.body.id}`)).status, 404);
});

test('API tokens: expiry must be in the future and is enforced', async () => {
  const past = await admin.req('POST', '/api/auth/api-tokens', {
    name: 'old',
    expires_at: '2001-01-01T00:00:00Z',
  });
  assert.equal(past.status, 400);
  const soon = await admin.req('POST', '/api/auth/api-tokens', {
    name: 'soon',
    expires_at: new Date(Date.now() + 60_000).toISOString(),
  });
  assert.equal(soon.status, 201);
  const bot = new Client(s.url);
  bot.bearer = soon.body.token;
  assert.equal((await bot.req('GET', '/api/auth/me')).status, 200);
  const realNow = s.env.now;
  s.env.now = () => Date.now() + 120_000;
  try {
    assert.equal((await bot.req('GET', '/api/auth/me')).status, 401);
  } finally {
    s.env.now = realNow;
  }
});

test('step-up: required for sensitive operations, lasts five minutes, bound to the credential that did it', async () => {
  const c = new Client(s.url);
  await c.req('POST', '/api/auth/login', ADMIN);
  const denied = await c.req('DELETE', '/api/auth/totp');
  assert.equal(denied.status, 403);
  assert.equal(denied.body.code, 'step_up_required');
  const wrong = await c.req('POST', '/api/auth/step-up', { password: 'wrong password!!' });
  assert.equal(wrong.status, 401);
  const ok = await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(ok.status, 200);
  const until = Date.parse(ok.body.verified_until);
  assert.ok(until > Date.now() + 290_000 && until <= Date.now() + 301_000);
  // Another session of the same operator did not step up.
  const other = new Client(s.url);
  await other.req('POST', '/api/auth/login', ADMIN);
  assert.equal((await other.req('DELETE', '/api/auth/totp')).status, 403);
  assert.equal((await c.req('DELETE', '/api/auth/totp')).status, 200);
  const realNow = s.env.now;
  s.env.now = () => Date.now() + 301_000;
  try {
    assert.equal((await c.req('DELETE', '/api/auth/totp')).status, 403);
  } finally {
    s.env.now = realNow;
  }
  // Tokens step up too, on their own (for what a token may do at all: not TOTP, which is session-only).
  const t = await admin.req('POST', '/api/auth/api-tokens', { name: 'stepper' });
  const bot = new Client(s.url);
  bot.bearer = t.body.token;
  assert.equal(
    (await bot.req('POST', '/api/auth/api-tokens', { name: 'child' })).body.code,
    'step_up_required',
  );
  assert.equal((await bot.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  assert.equal((await bot.req('POST', '/api/auth/api-tokens', { name: 'child' })).status, 201);
});

test('sessions: listed with the current one marked, revoked at once, logout ends the session', async () => {
  const c = new Client(s.url);
  await c.req('POST', '/api/auth/login', ADMIN);
  const list = await c.req('GET', '/api/auth/sessions');
  const current = list.body.items.find((x: { current: boolean }) => x.current);
  assert.ok(current);
  assert.equal(JSON.stringify(list.body).includes(c.cookies.get('svc_session')!), false);
  const victim = new Client(s.url);
  await victim.req('POST', '/api/auth/login', ADMIN);
  const vid = (await victim.req('GET', '/api/auth/sessions')).body.items.find(
    (x: { current: boolean }) => x.current,
  ).id;
  assert.equal((await c.req('DELETE', `/api/auth/sessions/${vid}`)).status, 204);
  assert.equal((await victim.req('GET', '/api/auth/me')).status, 401);
  assert.equal((await c.req('DELETE', '/api/auth/sessions/not-an-id')).status, 400);
  const out = await c.req('POST', '/api/auth/logout');
  assert.equal(out.status, 204);
  assert.equal(c.cookies.has('svc_session'), false);
  assert.equal((await c.req('GET', '/api/auth/me')).status, 401);
});

test('sessions expire when idle and at their absolute limit', async () => {
  const c = new Client(s.url);
  await c.req('POST', '/api/auth/login', ADMIN);
  const realNow = s.env.now;
  try {
    s.env.now = () => Date.now() + (s.env.config.sessionIdleSeconds + 5) * 1000;
    assert.equal((await c.req('GET', '/api/auth/me')).status, 401);
  } finally {
    s.env.now = realNow;
  }
  const d = new Client(s.url);
  await d.req('POST', '/api/auth/login', ADMIN);
  try {
    // Kept busy (never idle) but past the absolute limit.
    let t = Date.now();
    const step = (s.env.config.sessionIdleSeconds - 60) * 1000;
    while (t < Date.now() + s.env.config.sessionMaxSeconds * 1000) {
      t += step;
      const at = t;
      s.env.now = () => at;
      const r = await d.req('GET', '/api/auth/me');
      if (r.status === 401) break;
    }
    assert.ok(t >= Date.now() + s.env.config.sessionMaxSeconds * 1000 - step);
    assert.equal((await d.req('GET', '/api/auth/me')).status, 401);
  } finally {
    s.env.now = realNow;
  }
});

test('TOTP: setup, enable with a code, login needs the code, a used code is refused, recovery codes work once, disable needs step-up', async () => {
  const c = new Client(s.url);
  await c.req('POST', '/api/auth/login', ADMIN);
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const setup = await c.req('POST', '/api/auth/totp/setup');
  assert.equal(setup.status, 200);
  assert.match(setup.body.otpauth_url, /^otpauth:\/\/totp\//);
  const secret: string = setup.body.secret;
  const bad = await c.req('POST', '/api/auth/totp/enable', { code: '000000' });
  assert.equal(bad.status, 401);
  const enabled = await c.req('POST', '/api/auth/totp/enable', { code: await totpCode(secret) });
  assert.equal(enabled.status, 200);
  assert.equal(enabled.body.enabled, true);
  assert.equal(enabled.body.recovery_codes.length, 10);
  // The secret is sealed at rest.
  const row = await s.env.db
    .selectFrom('users')
    .select(['totp_secret'])
    .where('username', '=', 'admin')
    .executeTakeFirstOrThrow();
  assert.ok(row.totp_secret!.startsWith('v1.'));
  assert.equal(row.totp_secret!.includes(secret), false);

  const l = new Client(s.url);
  const first = await l.req('POST', '/api/auth/login', ADMIN);
  assert.deepEqual(first.body, { totp_required: true });
  assert.equal(l.cookies.has('svc_session'), false);
  assert.match(
    first.headers.getSetCookie().find((x) => x.startsWith('svc_pre='))!,
    /HttpOnly/,
  );
  assert.equal((await l.req('GET', '/api/auth/me')).status, 401);
  // Enabling used the current step, so the next valid code is the following step's.
  const next = await totpCode(secret, { epoch: Math.floor(Date.now() / 1000) + 30 });
  const done = await l.req('POST', '/api/auth/totp', { code: next });
  assert.equal(done.status, 200, done.text);
  assert.equal(done.body.user.totp_enabled, true);
  assert.equal((await l.req('GET', '/api/auth/me')).status, 200);

  const replay = new Client(s.url);
  await replay.req('POST', '/api/auth/login', ADMIN);
  const again = await replay.req('POST', '/api/auth/totp', { code: next });
  assert.equal(again.status, 401);
  assert.equal(again.body.code, 'invalid_credentials');

  // Forged or missing svc_pre.
  const forged = new Client(s.url);
  forged.cookies.set('svc_pre', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.sig');
  assert.equal((await forged.req('POST', '/api/auth/totp', { code: '123456' })).status, 401);
  assert.equal((await new Client(s.url).req('POST', '/api/auth/totp', { code: '123456' })).status, 401);

  const recovery: string = enabled.body.recovery_codes[0];
  const viaRecovery = await replay.req('POST', '/api/auth/totp', { code: recovery });
  assert.equal(viaRecovery.status, 200);
  const r2 = new Client(s.url);
  await r2.req('POST', '/api/auth/login', ADMIN);
  assert.equal((await r2.req('POST', '/api/auth/totp', { code: recovery })).status, 401);

  // Step-up with TOTP on: a password alone is refused; a code works.
  const pw = await l.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(pw.status, 400);
  assert.equal((await l.req('DELETE', '/api/auth/totp')).status, 403);
  assert.equal(
    (await l.req('POST', '/api/auth/step-up', { code: enabled.body.recovery_codes[1] })).status,
    200,
  );
  const off = await l.req('DELETE', '/api/auth/totp');
  assert.equal(off.status, 200);
  assert.equal((await new Client(s.url).req('POST', '/api/auth/login', ADMIN)).body.user.totp_enabled, false);
});

test('audit: mutations by a principal are recorded newest first with a cursor, with no secrets', async () => {
  const t = await admin.req('POST', '/api/auth/api-tokens', { name: 'audited' });
  const page = await admin.req('GET', '/api/audit?limit=3');
  assert.equal(page.status, 200);
  assert.equal(page.body.items.length, 3);
  assert.ok(page.body.next_cursor);
  const ids = page.body.items.map((i: { id: string }) => Number(i.id));
  assert.deepEqual(
    [...ids].sort((a, b) => b - a),
    ids,
  );
  const created = page.body.items.find((i: { action: string }) => i.action === 'POST /api/auth/api-tokens');
  assert.ok(created);
  assert.equal(created.event, 'auth.api_token_created');
  assert.deepEqual(created.actor, { type: 'user', id: created.user.id, name: 'admin' });
  assert.deepEqual(created.target, { type: 'api_token', id: t.body.id });
  assert.equal(created.summary, 'Mint an API token: audited');
  assert.equal(created.ip, '127.0.0.1');
  assert.equal(created.outcome, 'ok');
  assert.equal(created.status, 201);
  const next = await admin.req('GET', `/api/audit?limit=3&cursor=${page.body.next_cursor}`);
  assert.ok(Number(next.body.items[0].id) < ids[2]);
  const all = await admin.req('GET', '/api/audit?limit=200');
  const dump = JSON.stringify(all.body);
  assert.equal(dump.includes(t.body.token), false);
  assert.equal(dump.includes(ADMIN.password), false);
  assert.ok(
    all.body.items.some(
      (i: any) =>
        i.action === 'POST /api/auth/login' && i.event === 'auth.login_failed' && i.outcome === 'error',
    ),
  );
  // A wrong second factor inside the TOTP route: that route, the finer event, the operator who tried.
  const totpFailed = all.body.items.find((i: any) => i.event === 'auth.totp_failed');
  assert.ok(totpFailed, 'a refused second factor is audited');
  assert.equal(totpFailed.action, 'POST /api/auth/totp');
  assert.deepEqual(
    [totpFailed.actor.type, totpFailed.actor.name, totpFailed.outcome],
    ['user', 'admin', 'error'],
  );
  assert.deepEqual(totpFailed.target, { type: 'user', id: totpFailed.actor.id });
  assert.equal((await admin.req('GET', '/api/audit?limit=0')).status, 400);
  assert.equal((await admin.req('GET', '/api/audit?cursor=abc')).status, 400);
});

test('health is public and reports the database', async () => {
  const r = await new Client(s.url).req('GET', '/api/health');
  assert.deepEqual(r.body, { status: 'ok', db: 'ok' });
});

test('metrics: 404 without the token configured', async () => {
  const r = await new Client(s.url).req('GET', '/metrics', undefined, {
    authorization: 'Bearer anything-at-all-here',
  });
  assert.equal(r.status, 404);
});
