// What changes how an operator signs in (TOTP setup, enable, disable, the password, the recovery
// codes) over the real server: an API token may never do it, with or without its own step-up (a
// leaked token that enrolled TOTP would own the second factor and lock the operator out of password
// step-up), and a session needs a recent step-up for the TOTP and recovery-code routes.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, apiToken, ADMIN, Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { totpCode } from '#lib/auth/totp.js';

let s: TestApp;
let token: string;
let codes: string[] = [];

before(async () => {
  s = await startTestApp();
  token = await apiToken(await adminClient(s), 'leaked');
});
after(async () => {
  await s.stop();
});

const forbidden = (r: { status: number; body: any }, what: string) => {
  assert.equal(r.status, 403, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.code, 'forbidden', what);
};
const stepUpRequired = (r: { status: number; body: any }, what: string) => {
  assert.equal(r.status, 403, `${what}: ${JSON.stringify(r.body)}`);
  assert.equal(r.body.code, 'step_up_required', what);
};

test('a bearer token cannot enrol TOTP (with or without its own step-up), disable it, change the password or the recovery codes', async () => {
  const bearer = new Client(s.url);
  bearer.bearer = token;
  // The attack: a token with no step-up asks for a TOTP secret to compute codes from.
  forbidden(await bearer.req('POST', '/api/auth/totp/setup'), 'setup without step-up');
  forbidden(await bearer.req('POST', '/api/auth/totp/enable', { code: '123456' }), 'enable without step-up');
  // A token that knows the password and steps up is still not the operator's way of signing in.
  assert.equal((await bearer.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  forbidden(await bearer.req('POST', '/api/auth/totp/setup'), 'setup with step-up');
  forbidden(await bearer.req('POST', '/api/auth/totp/enable', { code: '123456' }), 'enable with step-up');
  forbidden(await bearer.req('DELETE', '/api/auth/totp'), 'disable');
  forbidden(await bearer.req('POST', '/api/auth/recovery-codes'), 'recovery codes');
  forbidden(
    await bearer.req('POST', '/api/auth/password', {
      current_password: ADMIN.password,
      new_password: 'the attacker chose this one',
    }),
    'password',
  );
  // Nothing was half-done: no pending secret, the password and the plain login are the operator's.
  const row = await s.env.db
    .selectFrom('users')
    .select(['totp_pending', 'totp_enabled'])
    .where('username', '=', ADMIN.username)
    .executeTakeFirstOrThrow();
  assert.deepEqual(row, { totp_pending: null, totp_enabled: 0 });
  const login = await new Client(s.url).req('POST', '/api/auth/login', ADMIN);
  assert.equal(login.status, 200);
  assert.equal(login.body.user.totp_enabled, false);
});

test('a session without a step-up gets step_up_required for TOTP setup and enable; after one both work', async () => {
  const c = new Client(s.url);
  assert.equal((await c.req('POST', '/api/auth/login', ADMIN)).status, 200);
  // A login is not a step-up.
  stepUpRequired(await c.req('POST', '/api/auth/totp/setup'), 'setup');
  stepUpRequired(await c.req('POST', '/api/auth/totp/enable', { code: '123456' }), 'enable');
  assert.equal(
    (
      await s.env.db
        .selectFrom('users')
        .select('totp_pending')
        .where('username', '=', ADMIN.username)
        .executeTakeFirstOrThrow()
    ).totp_pending,
    null,
  );
  // Without TOTP there is nothing recovery codes recover: 409, not a silent success.
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const none = await c.req('POST', '/api/auth/recovery-codes');
  assert.equal(none.status, 409, none.text);
  assert.equal(none.body.code, 'conflict');
  const setup = await c.req('POST', '/api/auth/totp/setup');
  assert.equal(setup.status, 200, setup.text);
  const on = await c.req('POST', '/api/auth/totp/enable', { code: await totpCode(setup.body.secret) });
  assert.equal(on.status, 200, on.text);
  codes = on.body.recovery_codes;
  assert.equal(codes.length, 10);
});

test('recovery codes are replaced on request (session, step-up): the old ones stop working at once; audited without the codes', async () => {
  assert.ok(codes.length, 'TOTP was enabled by the previous test');
  const c = new Client(s.url);
  assert.deepEqual((await c.req('POST', '/api/auth/login', ADMIN)).body, { totp_required: true });
  assert.equal((await c.req('POST', '/api/auth/totp', { code: codes[0] })).status, 200);
  stepUpRequired(await c.req('POST', '/api/auth/recovery-codes'), 'recovery codes without step-up');
  assert.equal((await c.req('POST', '/api/auth/step-up', { code: codes[1] })).status, 200);
  const r = await c.req('POST', '/api/auth/recovery-codes');
  assert.equal(r.status, 200, r.text);
  assert.deepEqual(Object.keys(r.body), ['recovery_codes']);
  const fresh: string[] = r.body.recovery_codes;
  assert.equal(fresh.length, 10);
  assert.equal(new Set([...fresh, ...codes]).size, 20, 'all new');
  // An old code nobody used is dead; a new one signs in.
  const old = new Client(s.url);
  await old.req('POST', '/api/auth/login', ADMIN);
  const refused = await old.req('POST', '/api/auth/totp', { code: codes[2] });
  assert.equal(refused.status, 401);
  assert.equal(refused.body.code, 'invalid_credentials');
  assert.equal((await old.req('POST', '/api/auth/totp', { code: fresh[0] })).status, 200);
  const entry = await s.env.db
    .selectFrom('audit')
    .selectAll()
    .where('action', '=', 'auth.recovery_codes_replaced')
    .where('outcome', '=', 200)
    .executeTakeFirstOrThrow();
  assert.equal(entry.actor, ADMIN.username);
  for (const code of fresh)
    assert.equal(JSON.stringify(entry).includes(code), false, 'no code in the audit entry');
});
