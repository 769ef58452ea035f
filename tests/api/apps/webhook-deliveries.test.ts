// An app's log of webhook deliveries, read over the API with the typed client: every delivery
// leaves a bounded line with its outcome and reason, never its payload or signature, including
// those refused before verification; a flood keeps only the last 50 per app.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { adminClient } from '../../_support/server.js';
import { startTestApp, typedSession, type TestApp } from '../../_support/request.js';
import type { SvcClient } from '../../../client/index.js';
import { githubPing, githubPush, SHA_A, SHA_B } from '../../unit/webhooks/_payloads.js';
import { gitApp, github, deliver } from './_apps.js';

let s: TestApp;
let api: SvcClient;

before(async () => {
  s = await startTestApp();
  api = typedSession(s, await adminClient(s));
});
after(async () => {
  await s?.stop();
});

const logOf = (id: string) => api.GET('/api/apps/{id}/webhook/deliveries', { params: { path: { id } } });

test('webhook deliveries: every one is logged with its outcome and reason, newest first, never its payload or signature', async () => {
  const app = await gitApp(api);
  const other = await gitApp(api);
  const forged = github(app.secret + 'x', 'push', githubPush('refs/heads/main', SHA_B));
  assert.equal((await deliver(s, app.id, forged)).status, 401);
  assert.equal((await deliver(s, app.id, github(app.secret, 'ping', githubPing))).status, 200);
  const marker = 'commit-message-' + randomBytes(6).toString('hex');
  assert.equal(
    (await deliver(s, app.id, github(app.secret, 'push', githubPush('refs/heads/feature-x', SHA_B, marker))))
      .status,
    200,
  );
  const push = github(app.secret, 'push', githubPush('refs/heads/main', SHA_A, marker));
  const deployed = await deliver(s, app.id, push);
  assert.equal(deployed.status, 202, JSON.stringify(deployed.body));
  assert.equal((await deliver(s, app.id, push)).body.duplicate, true);
  // Unknown app: refused as before, and nothing to log it under.
  assert.equal(
    (await deliver(s, '01m7xsp88xare7pbe7126vxpxd', github(app.secret, 'ping', githubPing))).status,
    401,
  );

  const list = await logOf(app.id);
  assert.equal(list.response.status, 200, JSON.stringify(list.error));
  const items = list.data!.items;
  assert.deepEqual(
    items.map((i) => i.outcome),
    ['duplicate', 'deployed', 'ignored', 'ignored', 'rejected'],
  );
  const [dup, dep, ign, ping, rej] = items;
  assert.deepEqual(
    { ...dep, id: undefined, at: undefined },
    {
      id: undefined,
      at: undefined,
      provider: 'github',
      event: 'push',
      delivery_id: push.headers['x-github-delivery'],
      ref: 'main',
      commit: SHA_A,
      outcome: 'deployed',
      reason: null,
      deployment_id: deployed.body.deployment.id,
    },
  );
  assert.match(dup.reason!, /already received/);
  assert.equal(ign.ref, 'feature-x');
  assert.equal(ign.commit, SHA_B);
  assert.match(ign.reason!, /not the app's branch "main"/);
  assert.match(ping.reason!, /ping/);
  assert.deepEqual(
    {
      provider: rej.provider,
      event: rej.event,
      ref: rej.ref,
      commit: rej.commit,
      deployment_id: rej.deployment_id,
    },
    { provider: 'github', event: 'push', ref: null, commit: null, deployment_id: null },
  );
  assert.match(rej.reason!, /signature/);
  for (let i = 1; i < items.length; i++)
    assert.ok(items[i - 1].at >= items[i].at && Number(items[i - 1].id) > Number(items[i].id));
  assert.deepEqual((await logOf(other.id)).data!.items, [], 'per app');

  // Neither the payload nor any signature is stored.
  const rows = JSON.stringify(await s.env.db.selectFrom('webhook_delivery_log').selectAll().execute());
  assert.ok(!rows.includes(marker), 'no payload');
  for (const sig of [forged.headers['x-hub-signature-256']!, push.headers['x-hub-signature-256']!])
    assert.ok(!rows.includes(sig.slice(7, 31)), 'no signature');
});

test('webhook deliveries refused before verification (compressed, over 1 MiB) are logged as rejected too', async () => {
  const app = await gitApp(api);
  const gz = github(app.secret, 'push', githubPush('refs/heads/main'), { 'content-encoding': 'gzip' });
  assert.equal((await deliver(s, app.id, gz)).status, 400);
  const big = github(app.secret, 'push', { ...githubPush('refs/heads/main'), pad: 'x'.repeat(1_100_000) });
  assert.equal((await deliver(s, app.id, big)).status, 413);
  const items = (await logOf(app.id)).data!.items;
  assert.deepEqual(
    items.map((i) => [i.outcome, i.provider, i.event]),
    [
      ['rejected', 'github', 'push'],
      ['rejected', 'github', 'push'],
    ],
  );
  assert.match(items[0].reason!, /larger than/);
  assert.match(items[1].reason!, /Compressed/);
});

test('webhook deliveries: a flood (even of forged ones) keeps only the last 50 per app', async () => {
  const app = await gitApp(api);
  const other = await gitApp(api);
  assert.equal((await deliver(s, other.id, github(other.secret, 'ping', githubPing))).status, 200);
  for (let i = 0; i < 56; i++)
    assert.equal(
      (await deliver(s, app.id, github('wrong', 'push', githubPush('refs/heads/main')))).status,
      401,
    );
  assert.equal((await deliver(s, app.id, github(app.secret, 'ping', githubPing))).status, 200);
  const items = (await logOf(app.id)).data!.items;
  assert.equal(items.length, 50);
  assert.equal(items[0].outcome, 'ignored', 'the newest first');
  const count = async (id: string) =>
    Number(
      (
        await s.env.db
          .selectFrom('webhook_delivery_log')
          .select(s.env.db.fn.countAll<number>().as('n'))
          .where('app_id', '=', id)
          .executeTakeFirstOrThrow()
      ).n,
    );
  assert.equal(await count(app.id), 50, 'pruned on insert');
  assert.equal(await count(other.id), 1, "another app's log is its own");
});
