// People and permissions, in-process: a matrix generated from the route table (every operation for
// every role, and a deployer limited to another app), then the attacks replayed: another app by id,
// a viewer revealing a secret, a demoted operator's token, a revert without the original
// permission, a disabled operator. What goes over a WebSocket (topics, the shell, an open socket
// losing a role) needs a real socket: tests/runtime/permissions-ws.e2e.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { adminClient, Client } from '../_support/server.js';
import { startTestApp, type TestApp } from '../_support/request.js';
import { routes } from '../../runtime/routes.gen.js';
import { routeModule } from '../../runtime/route-types.js';
import { METHODS, type Method } from '#lib/http/handler.js';
import type { RouteSpec } from '#lib/http/route.js';
import { createApiToken } from '#lib/auth/tokens.js';
import { invalidateCredentials } from '#lib/auth/cache.js';
import {
  people,
  twoApps,
  insertDomainRow,
  FAKE_ID as FAKE,
  type Operator,
  type People,
} from '../_support/people.js';
import {
  INSTANCE_WRITES,
  ROLE_PERMISSIONS,
  isPermission,
  type Permission,
  type Role,
} from '#lib/auth/roles.js';

let s: TestApp;
let owner: Client;
let appA: string;
let appB: string;
let domainB: string;
let entryB: string;

let team: People;

before(async () => {
  // Not recorded for the route coverage: the matrix reaches every route without testing it.
  s = await startTestApp({ SVC_ENABLE_SHELL: 'true' }, { record: false });
  owner = await adminClient(s);
  team = people(s);
  [appA, appB] = await twoApps(owner);
  domainB = 'd' + FAKE.slice(1);
  await insertDomainRow(s.env, domainB, 'bravo.example.com', appB);
  const put = await owner.req('PUT', `/api/apps/${appB}/env`, {
    items: [{ key: 'TOKEN', value: 'b-secret', secret: true }],
  });
  assert.ok(put.status < 300, put.text);
  const entries = await owner.req('GET', `/api/audit?action=${encodeURIComponent('PUT /api/apps/{id}/env')}`);
  entryB = entries.body.items.find((e: any) => e.app_id === appB).id;
});

after(async () => {
  await s?.stop();
});

interface Operation {
  method: Method;
  pattern: string;
  spec: RouteSpec;
}

async function operations(): Promise<Operation[]> {
  const out: Operation[] = [];
  for (const route of routes) {
    const mod = await routeModule(route);
    for (const method of METHODS) {
      const h = mod[method];
      if (h && (h.spec.auth ?? 'operator') === 'operator')
        out.push({ method, pattern: route.pattern, spec: h.spec });
    }
  }
  return out;
}

test('every operator route declares a permission of the table (a route added without one fails here)', async () => {
  const missing = (await operations())
    .filter((o) => !isPermission(o.spec.permission))
    .map((o) => `${o.method} ${o.pattern}`);
  assert.deepEqual(missing, []);
});

/** A path for the operation that names app B (directly, or through a domain or an audit entry). */
function pathOf(pattern: string): string {
  return pattern.replace(/:(\w+)\+?/g, (_m, name: string) => {
    if (name === 'id' && pattern.startsWith('/api/apps/')) return appB;
    if (name === 'id' && pattern.startsWith('/api/domains/')) return domainB;
    if (name === 'id' && pattern.startsWith('/api/audit/')) return entryB;
    if (name === 'name') return 'web';
    if (name === 'key') return 'TOKEN';
    if (name === 'id' && pattern.startsWith('/api/addons/')) return 'nothing-here';
    return FAKE;
  });
}

/** Whether the route names an app (for the limited operator: app B, outside their list). */
const namesApp = (pattern: string) => /^\/api\/(apps\/:id|domains\/:id|audit\/:id)(\/|$)/.test(pattern);

type Outcome = 'forbidden' | 'hidden' | 'allowed';

/**
 * What a credential limited to apps holds: its role's permissions but those over the instance and
 * its people, and the `app.*` ones other than reading only where the request names one of its apps.
 */
function limitedOutcome(o: Operation, role: Role): Outcome {
  const perm = o.spec.permission as Permission;
  if (!ROLE_PERMISSIONS[role].has(perm) || INSTANCE_WRITES.includes(perm)) return 'forbidden';
  if (namesApp(o.pattern)) return 'hidden';
  // A route that names no app (a new app, an import, a redirect) is outside the list: refused unless the handler reads its app from the body.
  if (perm.startsWith('app.') && perm !== 'app.read' && !o.spec.appInBody) return 'forbidden';
  return 'allowed';
}

test('permission matrix: every operation for every role, a deployer limited to another app and an admin token limited to one', async () => {
  const ops = await operations();
  const people: Array<{ label: string; role: Role; limited: boolean; op: Operator; token?: boolean }> = [];
  // Limited first and owner last: an allowed write (a deleted domain) must not change what the next one sees.
  people.push({
    label: 'deployer limited to A',
    role: 'deployer',
    limited: true,
    op: await team.operator('lim', 'deployer', [appA]),
  });
  const limitedAdmin = await team.operator('lim-admin', 'admin');
  const limitedToken = (await team.tokenOf(limitedAdmin.id, { scopes: null, appIds: [appA] })).bearer!;
  people.push({
    label: 'admin token limited to A',
    role: 'admin',
    limited: true,
    op: { ...limitedAdmin, client: team.bearer(limitedToken), token: limitedToken },
    token: true,
  });
  for (const role of ['viewer', 'deployer', 'admin', 'owner'] as const)
    people.push({ label: role, role, limited: false, op: await team.operator(`m-${role}`, role) });
  const wrong: string[] = [];
  const tally: Record<Outcome, number> = { forbidden: 0, hidden: 0, allowed: 0 };
  for (const o of ops) {
    for (const p of people) {
      const holds = ROLE_PERMISSIONS[p.role].has(o.spec.permission as never);
      let expected: Outcome = p.limited ? limitedOutcome(o, p.role) : !holds ? 'forbidden' : 'allowed';
      // A token is refused what changes how its owner signs in.
      if (p.token && o.spec.sessionOnly && expected === 'allowed') expected = 'forbidden';
      // A body no route accepts: an allowed write stops at validation (or earlier at step-up) and changes nothing.
      const body = o.method === 'GET' || o.method === 'DELETE' ? undefined : '[0]';
      // Signing out ends the session it is sent with: a session of its own, not the one the matrix goes on with.
      const client =
        o.pattern === '/api/auth/logout'
          ? p.token
            ? await team.tokenOf(p.op.id, { scopes: null, appIds: [appA] })
            : await team.sessionOf(p.op.id)
          : p.op.client;
      const r = await client.req(o.method, pathOf(o.pattern), body);
      const got: Outcome =
        r.status === 403 && r.body?.code === 'forbidden'
          ? 'forbidden'
          : r.status === 404 && r.body?.error === 'No such app'
            ? 'hidden'
            : 'allowed';
      tally[got]++;
      if (got !== expected)
        wrong.push(
          `${o.method} ${o.pattern} as ${p.label}: expected ${expected}, got ${r.status} ${r.text.slice(0, 120)}`,
        );
    }
  }
  console.log(
    `permission matrix: ${ops.length} operations x ${people.length} principals = ${ops.length * people.length} requests`,
    tally,
  );
  assert.deepEqual(wrong, []);
});

test('a deployer limited to app A: app B is absent by id and in listings', async () => {
  const d = await team.operator('only-a', 'deployer', [appA]);
  assert.equal((await d.client.req('GET', `/api/apps/${appB}`)).status, 404);
  assert.equal((await d.client.req('GET', `/api/apps/${appA}`)).status, 200);
  // The same answer as an app that does not exist.
  const missing = await d.client.req('GET', `/api/apps/${FAKE}/env`);
  const other = await d.client.req('GET', `/api/apps/${appB}/env`);
  assert.deepEqual([other.status, other.body], [missing.status, missing.body]);
  assert.equal((await d.client.req('GET', `/api/domains/${domainB}`)).status, 404);
  assert.equal((await d.client.req('GET', `/api/audit/${entryB}/diff`)).status, 404);
  const apps = (await d.client.req('GET', '/api/apps')).body.items.map((a: any) => a.id);
  assert.deepEqual(apps, [appA]);
  const domains = (await d.client.req('GET', '/api/domains')).body.items;
  assert.ok(!domains.some((x: any) => x.app_id === appB));
  const audit = (await d.client.req('GET', '/api/audit?limit=200')).body.items;
  assert.ok(audit.length > 0);
  assert.ok(!audit.some((e: any) => e.app_id === appB || e.target.id === appB), 'no entry about app B');
  assert.ok(
    (await owner.req('GET', '/api/audit?limit=200')).body.items.some((e: any) => e.app_id === appB),
    'the owner sees it',
  );
  // A token of the same person reaches what they do, and only that.
  assert.equal((await team.bearer(d.token).req('GET', `/api/apps/${appB}/deployments`)).status, 404);
});

test('a viewer cannot reveal a secret, even stepped up', async () => {
  const v = await team.operator('peek', 'viewer', null, { stepUp: true });
  const r = await v.client.req('GET', `/api/apps/${appB}/env/TOKEN/reveal`);
  assert.equal(r.status, 403);
  assert.equal(r.body.code, 'forbidden');
  assert.ok(!r.text.includes('b-secret'));
  const list = await v.client.req('GET', `/api/apps/${appB}/env`);
  assert.equal(list.status, 200);
  assert.ok(!list.text.includes('b-secret'));
});

test('a token acts with its scopes within its owner current role, and its apps within the owner list', async () => {
  const o = await team.operator('scoped', 'admin');
  const other = await createApiToken(s.env.db, o.id, 'narrow', null);
  await s.env.db
    .updateTable('api_tokens')
    .set({
      scopes: JSON.stringify(['app.read', 'app.deploy', 'owners.manage']),
      app_ids: JSON.stringify([appA]),
    })
    .where('id', '=', other.id)
    .execute();
  invalidateCredentials();
  const t = team.bearer(other.token);
  const me = (await t.req('GET', '/api/auth/me')).body;
  assert.deepEqual(
    me.permissions,
    ['app.deploy', 'app.read', 'self.read'],
    'owners.manage is not the admin role',
  );
  assert.equal((await t.req('GET', `/api/apps/${appB}`)).status, 404);
  assert.equal((await t.req('GET', `/api/apps/${appA}`)).status, 200);
  assert.equal((await t.req('PATCH', `/api/apps/${appA}`, {})).body.code, 'forbidden');
  assert.deepEqual(
    (await t.req('GET', '/api/apps')).body.items.map((a: any) => a.id),
    [appA],
  );
  // The owner's role shrinks to viewer: the token's deploy scope goes with it.
  await team.setRow(o.id, { role: 'viewer' });
  assert.deepEqual((await t.req('GET', '/api/auth/me')).body.permissions, ['app.read', 'self.read']);
});

test('a revert needs the permission and the app of the route whose entry it reverts', async () => {
  const put = await owner.req('PUT', `/api/apps/${appA}/env`, {
    items: [{ key: 'PLAIN', value: 'one', secret: false }],
  });
  assert.ok(put.status < 300, put.text);
  const items = (await owner.req('GET', `/api/audit?target=${appA}`)).body.items;
  const entry = items.find((e: any) => e.action === 'PUT /api/apps/{id}/env' && e.revertible);
  assert.ok(entry, 'a revertible env entry');
  const viewer = await team.operator('rv-viewer', 'viewer');
  const v = await viewer.client.req('POST', `/api/audit/${entry.id}/revert`, {});
  assert.equal(v.status, 403);
  assert.equal(v.body.code, 'forbidden');
  const limited = await team.operator('rv-limited', 'deployer', [appB]);
  assert.equal((await limited.client.req('POST', `/api/audit/${entry.id}/revert`, {})).status, 404);
  const deployer = await team.operator('rv-deployer', 'deployer');
  const ok = await deployer.client.req('POST', `/api/audit/${entry.id}/revert`, {});
  assert.equal(ok.status, 200, ok.text);
  const after = await owner.req('GET', `/api/audit/${ok.body.audit_id}/diff`);
  assert.equal(after.status, 200);
});

test('a disabled operator: their session and token authenticate as nothing; enabling restores them', async () => {
  const d = await team.operator('gone', 'admin');
  assert.equal((await d.client.req('GET', '/api/auth/me')).status, 200);
  await team.setRow(d.id, { disabled: 1 });
  assert.equal((await d.client.req('GET', '/api/auth/me')).status, 401);
  assert.equal((await team.bearer(d.token).req('GET', '/api/auth/me')).status, 401);
  await team.setRow(d.id, { disabled: 0 });
  assert.equal((await team.bearer(d.token).req('GET', '/api/auth/me')).status, 200);
});

test('audit actors: a token entry names the token and its owner', async () => {
  const o = await team.operator('actor', 'admin');
  const t = team.bearer(o.token);
  assert.ok((await t.req('PUT', `/api/apps/${appA}/env/ACTOR`, { value: 'x' })).status < 300);
  const e = (
    await owner.req(
      'GET',
      `/api/audit?target=${appA}&action=${encodeURIComponent('PUT /api/apps/{id}/env/{key}')}`,
    )
  ).body.items[0];
  assert.equal(e.actor.type, 'token');
  assert.equal(e.actor.name, 'actor-token');
  assert.equal(e.actor.owner_id, o.id);
  assert.equal(e.app_id, appA);
});
