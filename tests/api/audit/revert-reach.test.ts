// A revert is judged where its target is now as well as where it was (docs/permissions.md
// "Audit"): a token limited to app A may not revert "domain moved from A to B" (which would pull
// B's domain back to A) nor, with force, the creation of a domain that belongs to B now: both
// answer 404 as B itself does, and nothing changes. Someone who reaches both apps may.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import type { SvcClient } from '../../../client/index.js';
import { startTestApp, typedClient, type TestApp } from '../../_support/request.js';
import { adminClient, ADMIN, type Client } from '../../_support/server.js';
import { people, twoApps } from '../../_support/people.js';

let s: TestApp;
let owner: Client;
let ownerApi: SvcClient;
let limitedA: SvcClient;
let appA: string;
let appB: string;

before(async () => {
  s = await startTestApp();
  owner = await adminClient(s);
  assert.equal((await owner.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  [appA, appB] = await twoApps(owner, ['reach-a', 'reach-b'], 'nginx:1.27');
  const team = people(s);
  const me = (await owner.req('GET', '/api/auth/me')).body.user.id as string;
  ownerApi = await typedClient(s, (await team.tokenOf(me, undefined, { stepUp: true })).bearer!);
  const admin = await team.operator('reach-admin', 'admin', null, { stepUp: true });
  limitedA = await typedClient(
    s,
    (await team.tokenOf(admin.id, { scopes: null, appIds: [appA] }, { stepUp: true })).bearer!,
  );
});
after(() => s?.stop());

async function entryOf(event: string, target: string): Promise<number> {
  const r = await owner.req('GET', `/api/audit?action=${event}&target=${target}&limit=1`);
  assert.ok(r.body.items[0], `no ${event} entry for ${target}`);
  return r.body.items[0].id as number;
}

const revert = (by: SvcClient, id: number, force = false) =>
  by.POST('/api/audit/{id}/revert', { params: { path: { id: String(id) } }, body: { force } });

async function appOf(id: string): Promise<string | null | undefined> {
  return (await ownerApi.GET('/api/domains/{id}', { params: { path: { id } } })).data?.domain.app_id;
}

test('a token limited to A cannot revert a move of its domain to B, nor force-delete it at B; the owner can', async () => {
  const made = await limitedA.POST('/api/domains', {
    body: { hostname: 'reach.example.net', app_id: appA, service: 'web', port: 80 },
  });
  assert.equal(made.response.status, 201, JSON.stringify(made.error));
  const id = made.data!.domain.id;
  const created = await entryOf('domain.created', id);
  const moved = await ownerApi.PATCH('/api/domains/{id}', {
    params: { path: { id } },
    body: { app_id: appB, service: 'web', port: 80 },
  });
  assert.equal(moved.response.status, 200, JSON.stringify(moved.error));
  const move = await entryOf('domain.updated', id);
  // The caller sees neither the domain nor B.
  assert.equal((await limitedA.GET('/api/domains/{id}', { params: { path: { id } } })).response.status, 404);

  for (const [entry, force] of [
    [move, false],
    [move, true],
    [created, true],
  ] as const) {
    const r = await revert(limitedA, entry, force);
    assert.equal(r.response.status, 404, `entry ${entry} force=${force}: ${JSON.stringify(r.error)}`);
    assert.equal((r.error as { code: string }).code, 'not_found');
    assert.equal(await appOf(id), appB, 'the domain stayed with B');
  }

  // Someone who reaches both apps reverts the move: the domain goes back to A.
  const ok = await revert(ownerApi, move);
  assert.equal(ok.response.status, 200, JSON.stringify(ok.error));
  assert.equal(await appOf(id), appA);
});

test("a domain turned into a redirect since is out of a limited caller's reach for a revert (403, as for a redirect)", async () => {
  const made = await limitedA.POST('/api/domains', {
    body: { hostname: 'reach-redirect.example.net', app_id: appA, service: 'web', port: 80 },
  });
  assert.equal(made.response.status, 201, JSON.stringify(made.error));
  const id = made.data!.domain.id;
  const created = await entryOf('domain.created', id);
  const r1 = await ownerApi.PATCH('/api/domains/{id}', {
    params: { path: { id } },
    body: { redirect_to: 'example.org' },
  });
  assert.equal(r1.response.status, 200, JSON.stringify(r1.error));
  const r = await revert(limitedA, created, true);
  assert.equal(r.response.status, 403, JSON.stringify(r.error));
  const still = await ownerApi.GET('/api/domains/{id}', { params: { path: { id } } });
  assert.equal(still.data!.domain.redirect_to, 'example.org', 'the redirect stayed');
});

test("an app's own kinds (env, settings, triggers) stay with their app: the limited caller reverts its own", async () => {
  const put = await limitedA.PUT('/api/apps/{id}/env', {
    params: { path: { id: appA } },
    body: { items: [{ key: 'MODE', value: 'one', secret: false }] },
  });
  assert.equal(put.response.status, 200, JSON.stringify(put.error));
  const entry = await entryOf('app.env_replaced', appA);
  const r = await revert(limitedA, entry);
  assert.equal(r.response.status, 200, JSON.stringify(r.error));
});
