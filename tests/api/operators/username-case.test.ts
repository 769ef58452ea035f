// Usernames are unique without regard to case (docs/operators.md "Rules"): an invitation accepted
// as `ADMIN` or `Admin` beside `admin` answers 409 and the link stays usable; signing in as `ADMIN`
// is signing in as `admin`, and failed attempts under any case count against the one account.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createClient } from '../../../client/index.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { adminClient, ADMIN, type Client } from '../../_support/server.js';
import { invite } from '../../_support/people.js';

let s: TestApp;
let owner: Client;

before(async () => {
  s = await startTestApp();
  owner = await adminClient(s);
  assert.equal((await owner.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
});
after(() => s?.stop());

/** A client with no credential, as a person who opened an invitation link. */
const anonymous = () => createClient(s.url, { fetch: (r) => s.fetch(r) });

test('an invitation accepted under a name that differs only in case from a taken one: 409, the link still works', async () => {
  const link = await invite(owner, { role: 'viewer' });
  for (const username of [ADMIN.username.toUpperCase(), 'Admin']) {
    const r = await anonymous().POST('/api/invitations/{token}/accept', {
      params: { path: { token: link.token } },
      body: { username, password: 'a long enough passphrase' },
    });
    assert.equal(r.response.status, 409, `${username}: ${JSON.stringify(r.error)}`);
    assert.equal((r.error as { code: string }).code, 'conflict');
  }
  const ok = await anonymous().POST('/api/invitations/{token}/accept', {
    params: { path: { token: link.token } },
    body: { username: 'Viewer-One', password: 'a long enough passphrase' },
  });
  assert.equal(ok.response.status, 201, JSON.stringify(ok.error));
  const names = (await s.env.db.selectFrom('users').select('username').execute()).map((u) => u.username);
  assert.equal(names.filter((n) => n.toLowerCase() === ADMIN.username).length, 1);
});

test('signing in as ADMIN is signing in as admin', async () => {
  const r = await anonymous().POST('/api/auth/login', {
    body: { username: ADMIN.username.toUpperCase(), password: ADMIN.password },
  });
  assert.equal(r.response.status, 200, JSON.stringify(r.error));
  assert.equal((r.data as { user: { username: string } }).user.username, ADMIN.username);
});
