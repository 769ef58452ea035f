// Step-up belongs to the effect. The route table is walked against the contract's list: every
// operation's step-up mark (always, for some effects, never) and its session-only mark are what the
// list says, so a route added later without its mark fails here. Then the marks are played over
// HTTP with a bearer token that never stepped up, and an audit revert is shown to replay the
// original route's policy (a certificate removal reverted by a token without step-up).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { routes } from '../../runtime/routes.gen.js';
import { routeModule } from '../../runtime/route-types.js';
import { openApiPath } from '../../runtime/openapi.js';
import { METHODS } from '#lib/http/handler.js';
import { adminClient, apiToken, ADMIN, Client } from '../_support/server.js';
import { startTestApp, type TestApp } from '../_support/request.js';
import { makeCa, issue } from '../_support/pki.js';

/** The contract's step-up list ("Setup and authentication" and every section's "(step-up)"). */
const ALWAYS = [
  'DELETE /api/apps/{id}',
  'DELETE /api/apps/{id}/backups/{bid}',
  'DELETE /api/apps/{id}/backups/runs/{rid}',
  'POST /api/apps/{id}/backups/runs/{rid}/restore',
  'DELETE /api/apps/{id}/databases/{dbid}',
  'GET /api/apps/{id}/env/{key}/reveal',
  'GET /api/apps/{id}/services/{name}/shell',
  'POST /api/apps/{id}/runs',
  'POST /api/auth/api-tokens',
  'POST /api/auth/recovery-codes',
  'DELETE /api/auth/totp',
  'POST /api/auth/totp/enable',
  'POST /api/auth/totp/setup',
  'POST /api/domains/{id}/certificate',
  'DELETE /api/domains/{id}/certificate',
  'DELETE /api/instance/backup/runs/{rid}',
  'POST /api/instance/prune',
  'POST /api/instance/reset',
  'POST /api/instance/restart',
  'POST /api/nodes/join',
  'DELETE /api/nodes/{id}',
  'PATCH /api/operators/{id}',
  'DELETE /api/operators/{id}',
  'POST /api/operators/{id}/reset',
  'POST /api/operators/invitations',
  'POST /api/registries',
  'PATCH /api/registries/{id}',
  'POST /api/apps/{id}/deploy-hook',
];

/** Step-up for some effects only: the handler decides, and says when in the document. */
const WHEN = [
  'PATCH /api/apps/{id}/backups/{bid}',
  'POST /api/audit/{id}/revert',
  'PUT /api/instance/backup',
];

/** Nothing a token does may change how its owner signs in. */
const SESSION_ONLY = [
  'POST /api/auth/password',
  'POST /api/auth/recovery-codes',
  'DELETE /api/auth/totp',
  'POST /api/auth/totp/enable',
  'POST /api/auth/totp/setup',
];

async function operations(): Promise<Array<{ op: string; path: string; method: string; spec: any }>> {
  const out = [];
  for (const r of routes) {
    const mod = await routeModule(r);
    for (const m of METHODS) {
      const h = mod[m];
      if (h) out.push({ op: `${m} ${openApiPath(r.pattern)}`, path: r.pattern, method: m, spec: h.spec });
    }
  }
  return out;
}

test('every operation carries the step-up and session-only marks of the contract list, and no other', async () => {
  const ops = await operations();
  const known = new Set(ops.map((o) => o.op));
  for (const op of [...ALWAYS, ...WHEN, ...SESSION_ONLY])
    assert.ok(known.has(op), `${op} is in the list but not in the route table`);
  const wrong: string[] = [];
  for (const { op, spec } of ops) {
    if ((spec.stepUp === true) !== ALWAYS.includes(op)) wrong.push(`${op}: stepUp ${spec.stepUp === true}`);
    if ((typeof spec.stepUpWhen === 'string' && spec.stepUpWhen.length > 0) !== WHEN.includes(op))
      wrong.push(`${op}: stepUpWhen ${spec.stepUpWhen}`);
    if (spec.stepUp && spec.stepUpWhen) wrong.push(`${op}: both always and conditional`);
    if ((spec.sessionOnly === true) !== SESSION_ONLY.includes(op))
      wrong.push(`${op}: sessionOnly ${spec.sessionOnly === true}`);
  }
  assert.deepEqual(wrong, []);
});

let s: TestApp;
let admin: Client;
let token: Client;
let dir: string;

before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'svc-stepup-'));
  s = await startTestApp();
  admin = await adminClient(s);
  token = new Client(s.url);
  token.bearer = await apiToken(admin, 'no step-up');
});

after(async () => {
  await s?.stop();
  await rm(dir, { recursive: true, force: true });
});

test('over HTTP, a bearer token that never stepped up gets 403 step_up_required on every always-step-up operation', async () => {
  const ops = await operations();
  const id = '01m7xsp88xare7pbe7126vxpxd';
  let checked = 0;
  for (const { op, path, method, spec } of ops) {
    // A WebSocket route's mark is checked at the upgrade (tests/engine/shell.test.ts); its plain GET answers as before.
    if (!spec.stepUp || spec.websocket) continue;
    const url = path.replace(/:(\w+)\+/g, 'a/b').replace(/:(\w+)/g, id);
    const r = await token.req(method, url, method === 'GET' || method === 'DELETE' ? undefined : {});
    const expected = spec.sessionOnly ? 'forbidden' : 'step_up_required';
    assert.equal(r.status, 403, `${op}: ${r.status} ${r.text}`);
    assert.equal(r.body.code, expected, op);
    checked++;
  }
  assert.equal(checked, ALWAYS.length - 1, 'every always-step-up operation but the shell upgrade');
});

test('over HTTP, a bearer token is refused every route that changes how its owner signs in, even after a step-up', async () => {
  const stepped = new Client(s.url);
  stepped.bearer = await apiToken(admin, 'stepped up');
  assert.equal((await stepped.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  for (const op of SESSION_ONLY) {
    const [method, path] = op.split(' ') as [string, string];
    const r = await stepped.req(method, path, method === 'DELETE' ? undefined : {});
    assert.equal(r.status, 403, `${op}: ${r.status} ${r.text}`);
    assert.equal(r.body.code, 'forbidden', op);
  }
  const me = await admin.req('GET', '/api/auth/me');
  assert.equal(me.body.user.totp_enabled, false, 'the owner still signs in as before');
});

test("an audit revert replays the original route's step-up: a token without one cannot restore or remove a certificate", async () => {
  const ca = await makeCa(dir);
  const cert = await issue(ca, ['revert.example.test']);
  const created = await admin.req('POST', '/api/domains', { hostname: 'revert.example.test' });
  assert.equal(created.status, 201, created.text);
  const domainId = created.body.domain.id;
  assert.equal((await admin.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const up = await admin.req('POST', `/api/domains/${domainId}/certificate`, {
    cert_pem: cert.certPem,
    key_pem: cert.keyPem,
  });
  assert.equal(up.status, 200, up.text);
  const removed = await admin.req('DELETE', `/api/domains/${domainId}/certificate`);
  assert.equal(removed.status, 200, removed.text);

  const entries = (await admin.req('GET', '/api/audit?limit=50')).body.items as Array<{
    id: string;
    action: string;
    revertible: boolean;
  }>;
  const upload = entries.find(
    (e) =>
      e.action === `POST /api/domains/{id}/certificate` || e.action.startsWith('domain.certificate_uploaded'),
  );
  const removal = entries.find(
    (e) =>
      e.action === `DELETE /api/domains/{id}/certificate` ||
      e.action.startsWith('domain.certificate_removed'),
  );
  assert.ok(
    upload?.revertible && removal?.revertible,
    `both entries are revertible: ${JSON.stringify(entries.slice(0, 5))}`,
  );

  // The removal's revert would bring the certificate back; the upload's would remove it.
  for (const entry of [removal!, upload!]) {
    const r = await token.req('POST', `/api/audit/${entry.id}/revert`, { force: true });
    assert.equal(r.status, 403, `${entry.action}: ${r.text}`);
    assert.equal(r.body.code, 'step_up_required');
  }
  const still = await admin.req('GET', `/api/domains/${domainId}`);
  assert.equal(still.body.domain.certificate, null, 'the refused revert restored nothing');

  // With its own step-up, the same token may revert: the policy is the original route's, no stricter.
  assert.equal((await token.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const ok = await token.req('POST', `/api/audit/${removal!.id}/revert`, { force: true });
  assert.equal(ok.status, 200, ok.text);
  const back = await admin.req('GET', `/api/domains/${domainId}`);
  assert.equal(back.body.domain.certificate?.source, 'uploaded', 'the revert restored the certificate');

  // Reverting that revert removes the certificate again: the original route's effect, its policy.
  const plain = new Client(s.url);
  plain.bearer = await apiToken(admin, 'another without step-up');
  const again = await plain.req('POST', `/api/audit/${ok.body.audit_id}/revert`, { force: true });
  assert.equal(again.status, 403, again.text);
  assert.equal(again.body.code, 'step_up_required');
});

test('a revert of an entry whose route needs no step-up needs none', async () => {
  const app = await admin.req('POST', '/api/apps', {
    name: 'stepup-revert',
    source: { type: 'image', image: 'busybox:latest' },
  });
  assert.equal(app.status, 201, app.text);
  const put = await admin.req('PUT', `/api/apps/${app.body.app.id}/env`, {
    items: [{ key: 'A', value: '1', secret: false }],
  });
  assert.equal(put.status, 200, put.text);
  const entries = (await admin.req('GET', '/api/audit?limit=20')).body.items as Array<{
    id: string;
    action: string;
  }>;
  const entry = entries.find((e) => e.action.includes('/env'))!;
  const fresh = new Client(s.url);
  fresh.bearer = await apiToken(admin, 'plain');
  const r = await fresh.req('POST', `/api/audit/${entry.id}/revert`, {});
  assert.equal(r.status, 200, r.text);
});
