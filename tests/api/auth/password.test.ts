// Changing the password over the real server: the current password proves the caller, the new one
// follows the setup rules, other sessions end at once, API tokens stay.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, apiToken, Client, ADMIN } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';

let s: TestApp;
before(async () => {
  s = await startTestApp();
});
after(async () => {
  await s.stop();
});

test('password change: wrong current is 401, weak or same new is 400, success ends other sessions but keeps this one and tokens', async () => {
  const admin = await adminClient(s);
  const other = new Client(s.url);
  assert.equal((await other.req('POST', '/api/auth/login', ADMIN)).status, 200);
  const token = await apiToken(admin, 'kept');
  const bearer = new Client(s.url, { authorization: `Bearer ${token}` });

  const wrong = await admin.req('POST', '/api/auth/password', {
    current_password: 'not it at all',
    new_password: 'a brand new long password',
  });
  assert.equal(wrong.status, 401);
  assert.equal(wrong.body.code, 'invalid_credentials');
  const short = await admin.req('POST', '/api/auth/password', {
    current_password: ADMIN.password,
    new_password: 'short',
  });
  assert.equal(short.status, 400);
  assert.equal(short.body.details[0].field, 'new_password');
  const same = await admin.req('POST', '/api/auth/password', {
    current_password: ADMIN.password,
    new_password: ADMIN.password,
  });
  assert.equal(same.status, 400);
  const extra = await admin.req('POST', '/api/auth/password', {
    current_password: ADMIN.password,
    new_password: 'a brand new long password',
    username: 'x',
  });
  assert.equal(extra.status, 400);
  // Nothing changed so far: the other session still works.
  assert.equal((await other.req('GET', '/api/auth/me')).status, 200);

  const ok = await admin.req('POST', '/api/auth/password', {
    current_password: ADMIN.password,
    new_password: 'a brand new long password',
  });
  assert.equal(ok.status, 204);
  assert.equal((await admin.req('GET', '/api/auth/me')).status, 200, 'the session that changed it stays');
  assert.equal((await other.req('GET', '/api/auth/me')).status, 401, 'every other session ends');
  assert.equal((await bearer.req('GET', '/api/auth/me')).status, 200, 'API tokens are separate credentials');

  const old = await new Client(s.url).req('POST', '/api/auth/login', ADMIN);
  assert.equal(old.status, 401);
  const fresh = await new Client(s.url).req('POST', '/api/auth/login', {
    username: ADMIN.username,
    password: 'a brand new long password',
  });
  assert.equal(fresh.status, 200);

  const audit = await admin.req('GET', '/api/audit');
  const entry = audit.body.items.find((e: { action: string }) => /password/.test(JSON.stringify(e)));
  assert.ok(entry, 'the change is audited');
  assert.equal(
    JSON.stringify(audit.body).includes('a brand new long password'),
    false,
    'no password in the audit',
  );
});
