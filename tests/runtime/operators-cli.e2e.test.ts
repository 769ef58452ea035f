// `svc operators list|disable-totp`: the real CLI against the data directory of a real running
// `svc serve`. disable-totp clears the second factor and the recovery codes, ends the operator's
// sessions (the running service refuses them), lets them sign in with the password alone, and is
// audited as the system actor `cli`.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, runCli, type Served } from '../_support/cli.js';
import { Client, ADMIN, TEST_MASTER_KEY } from '../_support/server.js';
import { totpCode } from '#lib/auth/totp.js';
import { poll } from '../_support/wait.js';
import { openDb } from '#lib/db/index.js';

let dataDir: string;
let svc: Served;
let admin: Client;
let vars: Record<string, string>;

before(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'svc-ops-cli-'));
  vars = {
    SVC_DATA_DIR: dataDir,
    SVC_MASTER_KEY: TEST_MASTER_KEY,
    SVC_PASSWORD_COST: '14',
    SVC_PROXY: 'off',
    SVC_AUTH_RATE_LIMIT: '1000',
  };
  svc = await serve(vars);
  admin = new Client(svc.url);
  const token = (await readFile(join(dataDir, 'setup.token'), 'utf8')).trim();
  assert.equal((await admin.req('POST', '/api/setup/admin', { token, ...ADMIN })).status, 201);
  assert.equal((await admin.req('POST', '/api/auth/login', ADMIN)).status, 200);
  // TOTP on, as an owner who then loses the phone would have it.
  assert.equal((await admin.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const setup = await admin.req('POST', '/api/auth/totp/setup');
  const enabled = await admin.req('POST', '/api/auth/totp/enable', {
    code: await totpCode(setup.body.secret),
  });
  assert.equal(enabled.status, 200, enabled.text);
});

after(async () => {
  await svc?.stop();
  await rm(dataDir, { recursive: true, force: true });
});

test('operators list: a readable table and --json with the operator fields', async () => {
  const table = await runCli(['operators', 'list'], vars);
  assert.equal(table.code, 0, table.stderr);
  const lines = table.stdout.trim().split('\n');
  assert.match(lines[0]!, /^USERNAME\s+ROLE\s+APPS\s+DISABLED\s+TOTP\s+LAST SIGN-IN$/);
  assert.match(lines[1]!, /^admin\s+owner\s+all\s+no\s+on\s+\S+$/);
  const json = await runCli(['operators', 'list', '--json'], vars);
  assert.equal(json.code, 0, json.stderr);
  const ops = JSON.parse(json.stdout);
  assert.equal(ops.length, 1);
  assert.deepEqual(Object.keys(ops[0]).sort(), [
    'app_ids',
    'created_at',
    'disabled',
    'id',
    'last_login_at',
    'role',
    'sso',
    'totp_enabled',
    'username',
  ]);
  assert.deepEqual(
    [ops[0].username, ops[0].role, ops[0].app_ids, ops[0].disabled, ops[0].totp_enabled],
    ['admin', 'owner', null, false, true],
  );
  assert.equal(JSON.stringify(ops).includes('password'), false);
  const bad = await runCli(['operators', 'lst'], vars);
  assert.equal(bad.code, 2);
  assert.match(bad.stderr, /unknown subcommand lst/);
  assert.match(bad.stderr, /disable-totp <username>/);
});

test('operators disable-totp: second factor and recovery codes gone, sessions ended, audited as cli', async () => {
  const me = await admin.req('GET', '/api/auth/me');
  assert.equal(me.status, 200);
  assert.equal(me.body.user.totp_enabled, true);
  const before = await new Client(svc.url).req('POST', '/api/auth/login', ADMIN);
  assert.deepEqual(before.body, { totp_required: true });

  const unknown = await runCli(['operators', 'disable-totp', 'nobody'], vars);
  assert.equal(unknown.code, 1);
  assert.match(unknown.stderr, /no operator is named nobody.*nothing was changed/);

  const r = await runCli(['operators', 'disable-totp', 'admin'], vars);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /admin: two-factor sign-in is off; recovery codes removed; 1 session\(s\) ended/);
  // The running service drops the session once its few-second credential cache lets go.
  await poll(
    'the session to end',
    async () => ((await admin.req('GET', '/api/auth/me')).status === 401 ? true : null),
    60_000,
    200,
  );

  const again = new Client(svc.url);
  const login = await again.req('POST', '/api/auth/login', ADMIN);
  assert.equal(login.status, 200, login.text);
  assert.equal(login.body.user.totp_enabled, false);
  const list = JSON.parse((await runCli(['operators', 'list', '--json'], vars)).stdout);
  assert.equal(list[0].totp_enabled, false);
  const db = openDb(dataDir);
  try {
    const row = await db
      .selectFrom('users')
      .select(['totp_secret', 'totp_pending'])
      .where('username', '=', 'admin')
      .executeTakeFirstOrThrow();
    assert.deepEqual(row, { totp_secret: null, totp_pending: null });
    assert.equal((await db.selectFrom('recovery_codes').select('id').execute()).length, 0);
  } finally {
    await db.destroy();
  }

  const audit = await again.req('GET', '/api/audit?limit=50');
  assert.equal(audit.status, 200, audit.text);
  const entry = audit.body.items.find((e: any) => e.event === 'operator.totp_disabled');
  assert.ok(entry, 'an audit entry for the change');
  assert.deepEqual(entry.actor, { type: 'system', id: null, name: 'cli' });
  assert.equal(entry.target.id, me.body.user.id);
  assert.equal(entry.detail.username, 'admin');
  assert.equal(entry.detail.sessions_ended, 1);
});

test('operators: a data directory without a service database is refused, and nothing is created', async () => {
  const empty = join(dataDir, 'nothing-here');
  const r = await runCli(['operators', 'list'], { ...vars, SVC_DATA_DIR: empty });
  assert.equal(r.code, 1);
  assert.match(r.stderr, /no service database at .*nothing-here\/svc\.db/);
  assert.equal(
    await readFile(join(empty, 'svc.db')).then(
      () => true,
      () => false,
    ),
    false,
  );
});
