// Inbound webhooks that deploy, over the real server: a push that deploys by cloning over SSH with
// the app's own key from a real sshd, replays and retries, coalescing. The webhook configuration,
// deliveries refused, triggers and deploy keys are in-process: tests/api/apps/webhooks.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac } from 'node:crypto';
import { createServer, type Socket } from 'node:net';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { startTestServer, adminClient, Client, type TestServer } from '../_support/server.js';
import { needDocker, needEngine, ensureBaseImage, BASE_IMAGE } from '../_support/docker.js';
import { needSshd, startSshd, makeBareRepo, type Sshd } from '../_support/sshd.js';
import { githubPush, SHA_A, SHA_B, ZERO } from '../unit/webhooks/_payloads.js';
import { until } from './_helpers.js';
import { startGitServer, webRepo, waitStatus, callInApp, cleanupApp } from './_deploy.js';
import { stackRemove } from '#lib/docker/index.js';

let s: TestServer;
let c: Client;
let sshd: Sshd | undefined;
const made: string[] = [];

before(async () => {
  s = await startTestServer();
  c = await adminClient(s);
});
after(async () => {
  for (const name of made) await stackRemove(s.env.engine, name, { volumes: true }).catch(() => {});
  await sshd?.stop();
  await s.stop();
});

const uniq = () => `w-${Math.random().toString(36).slice(2, 8)}`;

async function gitApp(
  repo_url = 'ssh://git@127.0.0.1:1/srv/app.git',
  branch = 'main',
): Promise<{ id: string; name: string }> {
  const name = uniq();
  made.push(name);
  const r = await c.req('POST', '/api/apps', { name, source: { type: 'git', repo_url, branch } });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

let deliveries = 0;
function github(secret: string | null, event: string, payload: unknown, extra: Record<string, string> = {}) {
  const body = Buffer.from(typeof payload === 'string' ? payload : JSON.stringify(payload));
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    'x-github-event': event,
    'x-github-delivery': `d-${++deliveries}-${Date.now()}`,
  };
  if (secret !== null)
    headers['x-hub-signature-256'] = 'sha256=' + createHmac('sha256', secret).update(body).digest('hex');
  return { body, headers: { ...headers, ...extra } };
}

/** The same signed body again, as a replay would send it: with another delivery id, or none. */
function withDelivery(d: { body: Buffer; headers: Record<string, string> }, id: string | null) {
  const headers = { ...d.headers };
  if (id === null) delete headers['x-github-delivery'];
  else headers['x-github-delivery'] = id;
  return { body: d.body, headers };
}

/** sshd for the tests that clone over SSH: needSshd fails under CI when it cannot run. */
async function ensureSshd(t: Parameters<typeof needSshd>[0]): Promise<Sshd | null> {
  if (!(await needDocker(t)) || !(await needSshd(t))) return null;
  await ensureBaseImage();
  sshd ??= await startSshd();
  return sshd;
}

async function deliver(appId: string, d: { body: Buffer; headers: Record<string, string> }) {
  const res = await fetch(`${s.url}/webhooks/${appId}`, {
    method: 'POST',
    headers: d.headers,
    body: new Uint8Array(d.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

test('a push webhook deploys: test-connection with the key, clone over SSH, succeeded, audited with the delivery id', async (t) => {
  const sshd = await ensureSshd(t);
  if (!sshd) return;
  const dockerfile = `FROM ${BASE_IMAGE}\nRUN mkdir -p /www && echo v1 > /www/index.html\nCMD ["httpd", "-f", "-p", "8080", "-h", "/www"]\n`;
  const head = await makeBareRepo(sshd, 'hooked', { Dockerfile: dockerfile });
  const app = await gitApp(sshd.url('hooked'));
  const key = (await c.req('POST', `/api/apps/${app.id}/ssh-key/regenerate`)).body;
  const refusedFirst = await c.req('POST', `/api/apps/${app.id}/ssh-key/test-connection`);
  assert.equal(refusedFirst.body.ok, false);
  await sshd.authorize([key.public_key]);
  const okConn = await c.req('POST', `/api/apps/${app.id}/ssh-key/test-connection`);
  assert.equal(okConn.body.ok, true, okConn.body.message);
  assert.doesNotMatch(okConn.body.message, /[\u0000-\u001f]/);

  const secret = (await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;
  const d = github(secret, 'push', githubPush('refs/heads/main', head));
  const r = await deliver(app.id, d);
  assert.equal(r.status, 202, JSON.stringify(r.body));
  assert.equal(r.body.deployment.trigger, 'push');
  const dup = await deliver(app.id, d);
  assert.deepEqual(dup.body, { duplicate: true });
  const done = await until(
    'deployment finished',
    async () => {
      const g = await c.req('GET', `/api/apps/${app.id}/deployments/${r.body.deployment.id}`);
      return ['succeeded', 'failed', 'canceled', 'interrupted'].includes(g.body.deployment?.status)
        ? g.body.deployment
        : null;
    },
    240_000,
  );
  assert.equal(done.status, 'succeeded', done.error);
  assert.equal(done.commit, head);
  assert.equal(done.delivery_id, d.headers['x-github-delivery']);
  const audit = (await c.req('GET', '/api/audit?limit=100')).body.items;
  const queued = audit.find((a: { event: string }) => a.event === 'webhook.deploy_queued');
  assert.equal(queued.action, 'POST /webhooks/{appID}');
  assert.deepEqual(
    [queued.actor, queued.target, queued.outcome],
    [{ type: 'system', id: null, name: 'webhook:github' }, { type: 'app', id: app.id }, 'ok'],
  );
  assert.equal(queued.detail.delivery_id, d.headers['x-github-delivery']);
  assert.equal(queued.detail.deployment, r.body.deployment.id);
  assert.equal(JSON.stringify(audit).includes(secret), false);
});

test('pushes in quick succession coalesce: one runs, the newest follows, the ones between are skipped', async (t) => {
  const sshd = await ensureSshd(t);
  if (!sshd) return;
  const dockerfile = (v: string) =>
    `FROM ${BASE_IMAGE}\nRUN mkdir -p /www && echo ${v} > /www/index.html && sleep 2\nCMD ["httpd", "-f", "-p", "8080", "-h", "/www"]\n`;
  await makeBareRepo(sshd, 'burst', { Dockerfile: dockerfile('b1') });
  const app = await gitApp(sshd.url('burst'));
  const key = (await c.req('POST', `/api/apps/${app.id}/ssh-key/regenerate`)).body;
  await sshd.authorize([key.public_key]);
  const secret = (await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;
  const answers = [];
  for (let i = 1; i <= 4; i++) {
    const r = await deliver(
      app.id,
      github(secret, 'push', githubPush('refs/heads/main', SHA_A.slice(0, 39) + i)),
    );
    assert.equal(r.status, 202, JSON.stringify(r.body));
    answers.push(r.body.deployment);
  }
  const final = await until(
    'all deployments terminal',
    async () => {
      const list = (await c.req('GET', `/api/apps/${app.id}/deployments`)).body.items as Array<{
        id: string;
        status: string;
        error: string | null;
      }>;
      return list.length === 4 &&
        list.every((d) => ['succeeded', 'failed', 'canceled', 'interrupted'].includes(d.status))
        ? list
        : null;
    },
    240_000,
  );
  const byId = new Map(final.map((d) => [d.id, d]));
  // The first push ran (or was superseded before it started); the last one always deploys.
  assert.equal(byId.get(answers[3]!.id)!.status, 'succeeded', JSON.stringify(final));
  const canceled = final.filter((d) => d.status === 'canceled');
  assert.ok(canceled.length >= 2, JSON.stringify(final));
  for (const d of canceled) assert.match(d.error ?? '', /supersed/i);
  assert.ok(final.filter((d) => d.status === 'succeeded').length <= 2);
});

const SHA_C = 'c0ffee0000000000000000000000000000000c01';

test('a captured push replayed with a new or without a delivery id is a duplicate, not a second deployment', async () => {
  const app = await gitApp();
  const secret = (await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;
  const d = github(secret, 'push', githubPush('refs/heads/main', SHA_C));
  const first = await deliver(app.id, d);
  assert.equal(first.status, 202, JSON.stringify(first.body));
  for (const id of ['5f0c1d9e-0000-4000-8000-000000000001', null]) {
    const r = await deliver(app.id, withDelivery(d, id));
    assert.equal(r.status, 200, JSON.stringify(r.body));
    assert.equal(r.body.duplicate, true, JSON.stringify(r.body));
    assert.match(r.body.reason, /already received/);
  }
  const list = (await c.req('GET', `/api/apps/${app.id}/deployments`)).body.items;
  assert.deepEqual(
    list.map((x: { id: string }) => x.id),
    [first.body.deployment.id],
  );
  const audit = (await c.req('GET', '/api/audit?limit=100')).body.items;
  assert.ok(
    audit.some(
      (a: { event: string; action: string; target: { id: string } }) =>
        a.event === 'webhook.duplicate' && a.action === 'POST /webhooks/{appID}' && a.target.id === app.id,
    ),
  );
});

test('a forge retry of a delivery that could not be queued deploys', async () => {
  const app = await gitApp();
  const secret = (await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;
  const d = github(secret, 'push', githubPush('refs/heads/main', SHA_B));
  // A full queue is the real refusal (503); the knob is the service's own bound.
  const opts = s.env.deployments.opts as { maxQueue: number };
  const saved = opts.maxQueue;
  opts.maxQueue = 0;
  let refused;
  try {
    refused = await deliver(app.id, d);
  } finally {
    opts.maxQueue = saved;
  }
  assert.equal(refused.status, 503, JSON.stringify(refused.body));
  assert.equal(refused.body.code, 'service_unavailable');
  assert.equal((await c.req('GET', `/api/apps/${app.id}/deployments`)).body.items.length, 0);
  // The forge retries the very same delivery (same id, same body): it deploys now.
  const retry = await deliver(app.id, d);
  assert.equal(retry.status, 202, JSON.stringify(retry.body));
  assert.equal(retry.body.deployment.delivery_id, d.headers['x-github-delivery']);
  // And its own retry after that is the duplicate.
  assert.deepEqual((await deliver(app.id, d)).body, { duplicate: true });
});

test('a push of the commit a deployment of the same ref is already working on does not queue another', async () => {
  // A git remote that accepts and never answers: the deployment stays in `cloning`.
  const held: Socket[] = [];
  const hang = createServer((sock) => held.push(sock));
  await new Promise<void>((r) => hang.listen(0, '127.0.0.1', r));
  const port = (hang.address() as { port: number }).port;
  try {
    const app = await gitApp(`git://127.0.0.1:${port}/app.git`);
    const secret = (await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;
    const first = await deliver(app.id, github(secret, 'push', githubPush('refs/heads/main', SHA_C)));
    assert.equal(first.status, 202, JSON.stringify(first.body));
    const id = first.body.deployment.id;
    await until(
      'deployment cloning',
      async () =>
        (await c.req('GET', `/api/apps/${app.id}/deployments/${id}`)).body.deployment.status === 'cloning',
    );
    // Another ref update landing on the same commit (its previous commit differs: not a replay).
    const other = await deliver(
      app.id,
      github(secret, 'push', { ...githubPush('refs/heads/main', SHA_C), before: SHA_A }),
    );
    assert.equal(other.status, 200, JSON.stringify(other.body));
    assert.equal(other.body.duplicate, true);
    assert.match(other.body.reason, new RegExp(`already being deployed \\(deployment ${id}\\)`));
    assert.equal((await c.req('GET', `/api/apps/${app.id}/deployments`)).body.items.length, 1);
    assert.equal((await c.req('POST', `/api/apps/${app.id}/deployments/${id}/cancel`)).status, 200);
  } finally {
    for (const sock of held) sock.destroy();
    await new Promise((r) => hang.close(r));
  }
});

test('an old tag push replayed later does not roll the app back, and a push of the live commit does not redeploy', async (t) => {
  if (!(await needEngine(t))) return;
  const git = await startGitServer();
  const run = promisify(execFile);
  const tag = (repo: string, name: string) => run('git', ['-C', join(git.base, repo), 'tag', name]);
  const tagPush = (name: string, commit: string) => ({
    ...githubPush(`refs/tags/${name}`, commit),
    before: ZERO,
    created: true,
  });
  const repo = uniq();
  let appName: string | undefined;
  try {
    const c1 = await git.commit(repo, webRepo('one'));
    await tag(repo, 'v1');
    const app = await gitApp(git.url(repo));
    appName = app.name;
    assert.equal(
      (await c.req('POST', `/api/apps/${app.id}/triggers`, { event: 'tag', pattern: 'v*' })).status,
      201,
    );
    const secret = (await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;
    const v1 = github(secret, 'push', tagPush('v1', c1));
    const r1 = await deliver(app.id, v1);
    assert.equal(r1.status, 202, JSON.stringify(r1.body));
    assert.equal((await waitStatus(c, app.id, r1.body.deployment.id, ['succeeded'])).commit, c1);
    const c2 = await git.commit(repo, webRepo('two'));
    await tag(repo, 'v2');
    const v2 = github(secret, 'push', tagPush('v2', c2));
    const r2 = await deliver(app.id, v2);
    assert.equal(r2.status, 202, JSON.stringify(r2.body));
    assert.equal((await waitStatus(c, app.id, r2.body.deployment.id, ['succeeded'])).commit, c2);

    // The captured v1 delivery, replayed with a fresh id and with none: refused, nothing queued.
    for (const id of ['0a0a0a0a-0000-4000-8000-00000000000a', null]) {
      const r = await deliver(app.id, withDelivery(v1, id));
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.duplicate, true, JSON.stringify(r.body));
    }
    // A new body for v2 (not a replay) naming the commit that is live now: nothing to deploy.
    const same = await deliver(app.id, github(secret, 'push', { ...tagPush('v2', c2), before: SHA_B }));
    assert.equal(same.status, 200, JSON.stringify(same.body));
    assert.match(same.body.reason, new RegExp(`already live \\(deployment ${r2.body.deployment.id}\\)`));
    const list = (await c.req('GET', `/api/apps/${app.id}/deployments`)).body.items;
    assert.deepEqual(
      list.map((x: { id: string }) => x.id),
      [r2.body.deployment.id, r1.body.deployment.id],
    );
    assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'two\n');
  } finally {
    await git.stop();
    if (appName) await cleanupApp(s.env.engine, appName);
  }
});
