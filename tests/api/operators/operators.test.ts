// Operators, invitations and reset links, in-process: single use under
// concurrent accepts, expired and tampered links, the owner rules (an admin never touches owners;
// the last enabled owner stays, even under two concurrent removals), disabling ending a session
// and a token at once, a reset link (new password, old one refused, TOTP cleared), the host CLI.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, ADMIN, Client } from '../../_support/server.js';
import { startTestApp, MIN_PASSWORD_COST, type TestApp } from '../../_support/request.js';
import { runCli } from '../../_support/cli.js';
import { INVITE_LINK, invite, linkToken } from '../../_support/people.js';
import { totpCode } from '#lib/auth/totp.js';
import { acceptInvitation } from '#lib/auth/invitations.js';
import { hashPassword as hashPasswordWith } from '#lib/auth/passwords.js';

const hashPasswordFor = (p: string) => hashPasswordWith(p, MIN_PASSWORD_COST);

let s: TestApp;
let owner: Client;
let n = 0;
const uniq = (p: string) => `${p}${++n}`;
const PASSWORD = 'a long enough passphrase';

before(async () => {
  s = await startTestApp();
  owner = await adminClient(s);
  assert.equal((await owner.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
});

after(async () => {
  await s?.stop();
});

/** A new operator of `role` through an invitation: a signed-in client (stepped up) and their id. */
async function operator(
  role: string,
  extra: Record<string, unknown> = {},
): Promise<{ c: Client; id: string; username: string }> {
  const { token } = await invite(owner, { role, ...extra });
  const c = new Client(s.url);
  const username = uniq(role);
  const r = await c.req('POST', `/api/invitations/${token}/accept`, { username, password: PASSWORD });
  assert.equal(r.status, 201, r.text);
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: PASSWORD })).status, 200);
  return { c, id: r.body.user.id, username };
}

async function ownerId(): Promise<string> {
  return (await owner.req('GET', '/api/auth/me')).body.user.id;
}

test('the operator list shows the owner with the contract shape; the login set last_login_at', async () => {
  const r = await owner.req('GET', '/api/operators');
  assert.equal(r.status, 200, r.text);
  const me = r.body.items.find((o: any) => o.username === ADMIN.username);
  assert.deepEqual(Object.keys(me).sort(), [
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
  assert.equal(me.role, 'owner');
  assert.equal(me.app_ids, null);
  assert.equal(me.disabled, false);
  assert.equal(me.sso, false);
  assert.ok(me.last_login_at && Date.parse(me.last_login_at) > Date.now() - 600_000, 'set by the login');
});

test('an invitation needs a step-up; its link is shown once, opens publicly and signs the new operator in', async () => {
  const fresh = new Client(s.url);
  assert.equal((await fresh.req('POST', '/api/auth/login', ADMIN)).status, 200);
  const refused = await fresh.req('POST', '/api/operators/invitations', { role: 'viewer' });
  assert.equal(refused.status, 403);
  assert.equal(refused.body.code, 'step_up_required');

  const created = await owner.req('POST', '/api/operators/invitations', {
    role: 'deployer',
    expires_in_hours: 2,
  });
  assert.equal(created.status, 201, created.text);
  const inv = created.body.invitation;
  assert.deepEqual(Object.keys(inv).sort(), ['app_ids', 'expires_at', 'id', 'kind', 'role', 'url']);
  // No SVC_PUBLIC_URL, no control domain: a path (never the request's Host), opened under the dashboard's origin.
  assert.ok(inv.url.startsWith('/invite/'), inv.url);
  assert.match(inv.url, INVITE_LINK);
  const hours = (Date.parse(inv.expires_at) - Date.now()) / 3_600_000;
  assert.ok(hours > 1.9 && hours <= 2, `expires in 2 hours (${hours})`);
  const token = linkToken(inv.url);

  const list = await owner.req('GET', '/api/operators/invitations');
  assert.equal(list.status, 200);
  assert.ok(!list.text.includes(token), 'the listing never shows a link');
  assert.equal(list.body.items.find((i: any) => i.id === inv.id).status, 'pending');
  const row = await s.env.db
    .selectFrom('invitations')
    .select('token_hash')
    .where('id', '=', inv.id)
    .executeTakeFirstOrThrow();
  assert.notEqual(row.token_hash, token, 'stored as a hash only');

  const pub = new Client(s.url);
  const peek = await pub.req('GET', `/api/invitations/${token}`);
  assert.equal(peek.status, 200, peek.text);
  assert.equal(peek.body.role, 'deployer');
  assert.equal(peek.body.expires_at, inv.expires_at);

  const accepted = await pub.req('POST', `/api/invitations/${token}/accept`, {
    username: 'dora',
    password: PASSWORD,
  });
  assert.equal(accepted.status, 201, accepted.text);
  assert.equal(accepted.body.user.username, 'dora');
  assert.ok(pub.cookies.get('svc_session') && pub.cookies.get('svc_csrf'), 'the session cookies');
  const me = await pub.req('GET', '/api/auth/me');
  assert.equal(me.status, 200);
  assert.equal(me.body.user.username, 'dora');
  const listed = (await owner.req('GET', '/api/operators')).body.items.find(
    (o: any) => o.username === 'dora',
  );
  assert.equal(listed.role, 'deployer');
  assert.ok(listed.last_login_at, 'accepting is a sign-in');

  // Used: the public check and a second accept answer 404, the listing says so.
  assert.equal((await new Client(s.url).req('GET', `/api/invitations/${token}`)).status, 404);
  assert.equal(
    (
      await new Client(s.url).req('POST', `/api/invitations/${token}/accept`, {
        username: 'dora2',
        password: PASSWORD,
      })
    ).status,
    404,
  );
  assert.equal(
    (await owner.req('GET', '/api/operators/invitations')).body.items.find((i: any) => i.id === inv.id)
      .status,
    'used',
  );

  // The audit names what happened and never carries the link.
  const audit = await owner.req('GET', '/api/audit?limit=100');
  const events = audit.body.items.map((e: any) => e.event);
  assert.ok(
    events.includes('operator.invited') && events.includes('operator.invitation_accepted'),
    events.join(' '),
  );
  const acceptedEntry = audit.body.items.find(
    (e: any) => e.event === 'operator.invitation_accepted' && e.status === 201,
  );
  assert.deepEqual(
    [acceptedEntry.actor.name, acceptedEntry.target.type, acceptedEntry.target.id],
    ['dora', 'user', accepted.body.user.id],
  );
  assert.ok(!audit.text.includes(token), 'no audit entry carries the token');
});

test('concurrent accepts of one invitation: exactly one creates an operator', async () => {
  const { token } = await invite(owner, { role: 'viewer' });
  // Four at once: at most what the password hashing queue admits together (more answer 429).
  const answers = await Promise.all(
    Array.from({ length: 4 }, (_, i) =>
      new Client(s.url).req('POST', `/api/invitations/${token}/accept`, {
        username: `race-${i}`,
        password: PASSWORD,
      }),
    ),
  );
  const statuses = answers.map((a) => a.status).sort();
  assert.deepEqual(statuses, [201, 404, 404, 404], answers.map((a) => a.text).join(' '));
  const names = (await owner.req('GET', '/api/operators')).body.items.map((o: any) => o.username);
  assert.equal(names.filter((u: string) => u.startsWith('race-')).length, 1);
});

test('two accepts that both passed the first lookup: the consuming UPDATE lets exactly one through', async () => {
  const { token } = await invite(owner, { role: 'viewer' });
  // Both wait in their hashing step until both have looked the link up: the race, made certain.
  let release!: () => void;
  const barrier = new Promise<void>((r) => (release = r));
  let waiting = 0;
  const hashPassword = async () => {
    if (++waiting === 2) release();
    await barrier;
    return hashPasswordFor(PASSWORD);
  };
  const results = await Promise.allSettled([
    acceptInvitation(s.env.db, token, { username: uniq('barrier'), hashPassword }),
    acceptInvitation(s.env.db, token, { username: uniq('barrier'), hashPassword }),
  ]);
  assert.deepEqual(results.map((r) => r.status).sort(), ['fulfilled', 'rejected']);
  const refused = results.find((r) => r.status === 'rejected') as PromiseRejectedResult;
  assert.equal(refused.reason.status, 404);
});

test('a taken username answers 409 and leaves the invitation usable', async () => {
  const { token } = await invite(owner, { role: 'viewer' });
  const taken = await new Client(s.url).req('POST', `/api/invitations/${token}/accept`, {
    username: ADMIN.username,
    password: PASSWORD,
  });
  assert.equal(taken.status, 409, taken.text);
  assert.equal(taken.body.code, 'conflict');
  assert.equal((await new Client(s.url).req('GET', `/api/invitations/${token}`)).status, 200, 'still usable');
  assert.equal(
    (
      await new Client(s.url).req('POST', `/api/invitations/${token}/accept`, {
        username: uniq('taken'),
        password: PASSWORD,
      })
    ).status,
    201,
  );
});

test('a tampered, malformed, expired or withdrawn link answers 404', async () => {
  const { token, id } = await invite(owner, { role: 'viewer', expires_in_hours: 1 });
  const last = token.at(-1) === 'A' ? 'B' : 'A';
  for (const bad of [token.slice(0, -1) + last, token.slice(1), 'x', `${token}A`]) {
    const pub = new Client(s.url);
    const peek = await pub.req('GET', `/api/invitations/${encodeURIComponent(bad)}`);
    assert.equal(peek.status, 404, bad);
    assert.equal(peek.body.code, 'not_found');
    assert.equal(
      (
        await pub.req('POST', `/api/invitations/${encodeURIComponent(bad)}/accept`, {
          username: uniq('t'),
          password: PASSWORD,
        })
      ).status,
      404,
    );
  }
  assert.equal(
    (await new Client(s.url).req('GET', `/api/invitations/${token}`)).status,
    200,
    'the real one works',
  );
  // Withdrawn: gone at once.
  assert.equal((await owner.req('DELETE', `/api/operators/invitations/${id}`)).status, 204);
  assert.equal((await new Client(s.url).req('GET', `/api/invitations/${token}`)).status, 404);
  assert.equal((await owner.req('DELETE', `/api/operators/invitations/${id}`)).status, 404);

  // Expired: made an hour and a minute ago with a one-hour life (the server's clock moved back for the creation only).
  const real = s.env.now;
  s.env.now = () => real() - 61 * 60_000;
  let expired: { token: string; id: string };
  try {
    expired = await invite(owner, { role: 'viewer', expires_in_hours: 1 });
  } finally {
    s.env.now = real;
  }
  assert.equal((await new Client(s.url).req('GET', `/api/invitations/${expired.token}`)).status, 404);
  assert.equal(
    (
      await new Client(s.url).req('POST', `/api/invitations/${expired.token}/accept`, {
        username: uniq('late'),
        password: PASSWORD,
      })
    ).status,
    404,
  );
  assert.equal(
    (await owner.req('GET', '/api/operators/invitations')).body.items.find((i: any) => i.id === expired.id)
      .status,
    'expired',
  );
});

test('an admin manages the other roles but never owners (403)', async () => {
  const admin = await operator('admin');
  const r = await admin.c.req('POST', '/api/operators/invitations', { role: 'owner' });
  assert.equal(r.status, 403, r.text);
  assert.equal(r.body.code, 'forbidden');
  const viewer = await operator('viewer');
  const promote = await admin.c.req('PATCH', `/api/operators/${viewer.id}`, { role: 'owner' });
  assert.equal(promote.status, 403, promote.text);
  const oid = await ownerId();
  assert.equal((await admin.c.req('PATCH', `/api/operators/${oid}`, { role: 'viewer' })).status, 403);
  assert.equal((await admin.c.req('PATCH', `/api/operators/${oid}`, { disabled: true })).status, 403);
  assert.equal((await admin.c.req('DELETE', `/api/operators/${oid}`)).status, 403);
  assert.equal(
    (await admin.c.req('POST', `/api/operators/${viewer.id}/reset`)).status,
    403,
    'reset links are an owner tool',
  );
  const ownerInvite = await invite(owner, { role: 'owner' });
  assert.equal((await admin.c.req('DELETE', `/api/operators/invitations/${ownerInvite.id}`)).status, 403);
  assert.equal(
    (await new Client(s.url).req('GET', `/api/invitations/${ownerInvite.token}`)).status,
    200,
    'the owner invitation stands',
  );
  // The other roles: allowed.
  assert.equal((await admin.c.req('POST', '/api/operators/invitations', { role: 'admin' })).status, 201);
  const changed = await admin.c.req('PATCH', `/api/operators/${viewer.id}`, { role: 'deployer' });
  assert.equal(changed.status, 200, changed.text);
  assert.equal(changed.body.operator.role, 'deployer');
  // Unchanged by the refusals.
  const me = (await owner.req('GET', '/api/operators')).body.items.find((o: any) => o.id === oid);
  assert.equal(me.role, 'owner');
  assert.equal(me.disabled, false);
});

test('app_ids: only for deployers and viewers, each an existing app', async () => {
  const app = await owner.req('POST', '/api/apps', {
    name: uniq('ops-app'),
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(app.status, 201, app.text);
  const appId = app.body.id ?? app.body.app?.id;
  const forAdmin = await owner.req('POST', '/api/operators/invitations', { role: 'admin', app_ids: [appId] });
  assert.equal(forAdmin.status, 400, forAdmin.text);
  const unknown = await owner.req('POST', '/api/operators/invitations', {
    role: 'viewer',
    app_ids: ['01m7xsp88xare7pbe7126vxpxd'],
  });
  assert.equal(unknown.status, 400, unknown.text);
  const v = await operator('viewer', { app_ids: [appId, appId] });
  const listed = (await owner.req('GET', '/api/operators')).body.items.find((o: any) => o.id === v.id);
  assert.deepEqual(listed.app_ids, [appId]);
  assert.equal(
    (await owner.req('PATCH', `/api/operators/${v.id}`, { role: 'admin', app_ids: [appId] })).status,
    400,
  );
  const promoted = await owner.req('PATCH', `/api/operators/${v.id}`, { role: 'admin' });
  assert.equal(promoted.status, 200, promoted.text);
  assert.equal(promoted.body.operator.app_ids, null, 'an admin reaches every app');
  const bad = await owner.req('PATCH', `/api/operators/${v.id}`, {});
  assert.equal(bad.status, 400);
});

test('the last enabled owner cannot be demoted, disabled or deleted (409), even by two concurrent removals', async () => {
  const oid = await ownerId();
  for (const [method, body] of [
    ['PATCH', { role: 'admin' }],
    ['PATCH', { disabled: true }],
    ['DELETE', undefined],
  ] as const) {
    const r = await owner.req(method, `/api/operators/${oid}`, body);
    assert.equal(r.status, 409, `${method} ${JSON.stringify(body)}: ${r.text}`);
    assert.equal(r.body.code, 'conflict');
  }
  // Two owners stepping down at the same moment: one does, the other is the last owner then (409).
  const second = await operator('owner');
  const [a, b] = await Promise.all([
    owner.req('PATCH', `/api/operators/${oid}`, { role: 'admin' }),
    second.c.req('PATCH', `/api/operators/${second.id}`, { role: 'admin' }),
  ]);
  assert.deepEqual([a.status, b.status].sort(), [200, 409], `${a.text} ${b.text}`);
  const owners = await s.env.db
    .selectFrom('users')
    .select('id')
    .where('role', '=', 'owner')
    .where('disabled', '=', 0)
    .execute();
  assert.equal(owners.length, 1);
  // The tests after this act as the owner who remains.
  if (a.status === 200) owner = second.c;
  // Deleting the other owner, then: the same rule holds for the remaining one.
  const remaining = owners[0]!.id;
  assert.equal((await owner.req('DELETE', `/api/operators/${remaining}`)).status, 409);
});

test('disabling an operator ends their session and token at once; they cannot sign in until enabled', async () => {
  const d = await operator('deployer');
  const tok = await d.c.req('POST', '/api/auth/api-tokens', { name: 'ci' });
  assert.equal(tok.status, 201, tok.text);
  const bearer = new Client(s.url);
  bearer.bearer = tok.body.token;
  assert.equal((await bearer.req('GET', '/api/auth/me')).status, 200);
  assert.equal((await d.c.req('GET', '/api/auth/me')).status, 200);

  const off = await owner.req('PATCH', `/api/operators/${d.id}`, { disabled: true });
  assert.equal(off.status, 200, off.text);
  assert.equal(off.body.operator.disabled, true);
  assert.equal((await d.c.req('GET', '/api/auth/me')).status, 401, 'the session ended');
  assert.equal((await bearer.req('GET', '/api/auth/me')).status, 401, 'the token was revoked');
  const login = await new Client(s.url).req('POST', '/api/auth/login', {
    username: d.username,
    password: PASSWORD,
  });
  assert.equal(login.status, 401);
  assert.equal(login.body.code, 'invalid_credentials');

  assert.equal((await owner.req('PATCH', `/api/operators/${d.id}`, { disabled: false })).status, 200);
  assert.equal(
    (await new Client(s.url).req('POST', '/api/auth/login', { username: d.username, password: PASSWORD }))
      .status,
    200,
  );
  assert.equal(
    (await bearer.req('GET', '/api/auth/me')).status,
    401,
    'enabling again does not bring the token back',
  );

  // Deleting: the same, and the row is gone.
  const again = new Client(s.url);
  assert.equal(
    (await again.req('POST', '/api/auth/login', { username: d.username, password: PASSWORD })).status,
    200,
  );
  assert.equal((await owner.req('DELETE', `/api/operators/${d.id}`)).status, 204);
  assert.equal((await again.req('GET', '/api/auth/me')).status, 401);
  assert.equal((await owner.req('DELETE', `/api/operators/${d.id}`)).status, 404);
});

test('a reset link sets a new password, refuses the old one, clears TOTP and ends the other sessions', async () => {
  const a = await operator('admin');
  const setup = await a.c.req('POST', '/api/auth/totp/setup');
  assert.equal(setup.status, 200, setup.text);
  assert.equal(
    (await a.c.req('POST', '/api/auth/totp/enable', { code: await totpCode(setup.body.secret) })).status,
    200,
  );
  const codes = () =>
    s.env.db.selectFrom('recovery_codes').select('id').where('user_id', '=', a.id).execute();
  assert.ok((await codes()).length > 0);

  const r = await owner.req('POST', `/api/operators/${a.id}/reset`);
  assert.equal(r.status, 201, r.text);
  assert.equal(r.body.invitation.kind, 'reset');
  const token = linkToken(r.body.invitation.url);
  const pub = new Client(s.url);
  const peek = await pub.req('GET', `/api/invitations/${token}`);
  assert.equal(peek.status, 200);
  assert.deepEqual([peek.body.kind, peek.body.username, peek.body.role], ['reset', a.username, 'admin']);
  assert.equal(
    (
      await pub.req('POST', `/api/invitations/${token}/accept`, {
        username: 'other',
        password: 'another long passphrase',
      })
    ).status,
    400,
    'the username stays',
  );

  const NEW = 'a brand new passphrase';
  const done = await pub.req('POST', `/api/invitations/${token}/accept`, { password: NEW });
  assert.equal(done.status, 201, done.text);
  assert.equal(done.body.user.username, a.username);
  assert.equal(done.body.user.totp_enabled, false);
  assert.equal((await pub.req('GET', '/api/auth/me')).status, 200, 'signed in');
  assert.equal((await a.c.req('GET', '/api/auth/me')).status, 401, 'the old session ended');
  assert.deepEqual(await codes(), [], 'recovery codes gone');

  const old = await new Client(s.url).req('POST', '/api/auth/login', {
    username: a.username,
    password: PASSWORD,
  });
  assert.equal(old.status, 401);
  const fresh = await new Client(s.url).req('POST', '/api/auth/login', {
    username: a.username,
    password: NEW,
  });
  assert.equal(fresh.status, 200, fresh.text);
  assert.equal(fresh.body.user?.username, a.username, 'no second factor asked');
  assert.equal(
    (
      await new Client(s.url).req('POST', `/api/invitations/${token}/accept`, {
        password: 'yet another passphrase',
      })
    ).status,
    404,
    'single use',
  );
  const events = (await owner.req('GET', '/api/audit?limit=50')).body.items.map((e: any) => e.event);
  assert.ok(
    events.includes('operator.reset_link_created') && events.includes('operator.password_reset'),
    events.join(' '),
  );
});

test('svc operators reset <username> prints a working reset link and audits it as the system actor cli', async () => {
  const v = await operator('viewer');
  const vars = {
    SVC_DATA_DIR: s.dataDir,
    // The service's database, whichever it is (the PostgreSQL pass gives each app its own).
    ...(s.env.config.databaseUrl ? { SVC_DATABASE_URL: s.env.config.databaseUrl } : {}),
    SVC_MASTER_KEY: 'a'.repeat(64),
    SVC_PUBLIC_URL: 'https://panel.example.test',
  };
  const unknown = await runCli(['operators', 'reset', 'nobody-by-that-name'], vars);
  assert.equal(unknown.code, 1, unknown.stderr);
  const r = await runCli(['operators', 'reset', v.username], vars);
  assert.equal(r.code, 0, r.stderr);
  const url = r.stdout.trim();
  assert.match(url, /^https:\/\/panel\.example\.test\/invite\/[A-Za-z0-9_-]{43}$/);
  const done = await new Client(s.url).req('POST', `/api/invitations/${linkToken(url)}/accept`, {
    password: 'reset from the host',
  });
  assert.equal(done.status, 201, done.text);
  assert.equal((await v.c.req('GET', '/api/auth/me')).status, 401, 'their old session ended');
  const entry = (await owner.req('GET', '/api/audit?limit=50')).body.items.find(
    (e: any) => e.event === 'operator.reset_link_created' && e.target.id === v.id,
  );
  assert.ok(entry, 'audited');
  assert.deepEqual(entry.actor, { type: 'system', id: null, name: 'cli' });
  assert.ok(!JSON.stringify(entry).includes(linkToken(url)));
});
