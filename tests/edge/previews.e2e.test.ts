// Previews end to end: a real control plane, real Caddy (with Pebble issuing over HTTP-01), the
// real engine and a git server on loopback; pull request deliveries signed like GitHub's and
// Gitea's. The tests run in order and share one lab, one server and one app.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { join } from 'node:path';
import { writeFile } from 'node:fs/promises';
import { needEdge, startEdgeLab, type EdgeLab } from '../_support/edge.js';
import { needEngine, ensureBaseImage } from '../_support/docker.js';
import { startTestServer, adminClient, type TestServer, type Client } from '../_support/server.js';
import { poll } from '../_support/wait.js';
import { startGitServer, webRepo, waitStatus, cleanupApp, type GitServer } from '../engine/_deploy.js';
import { execIn } from '../engine/_helpers.js';
import { listAppContainers } from '#lib/docker/index.js';
import { sweepExpired } from '#lib/previews/ops.js';
import {
  bitbucketPullRequest,
  githubPullRequest,
  giteaPullRequest,
  gitlabMergeRequest,
} from '../unit/webhooks/_payloads.js';

const run = promisify(execFile);
const BASE = 'pv.test';

let lab: EdgeLab | null = null;
let server: TestServer | null = null;
let git: GitServer | null = null;
let c: Client;
let app: { id: string; name: string };
let secret = '';
let repo = '';
let headSha = '';
const engineNames = new Set<string>();

after(async () => {
  if (server) {
    for (const n of engineNames) await cleanupApp(server.env.engine, n);
    await server.stop();
  }
  await lab?.stop();
  await git?.stop();
});

async function ready(t: import('node:test').TestContext): Promise<boolean> {
  if (!(await needEdge(t)) || !(await needEngine(t))) return false;
  if (server) return true;
  lab ??= await startEdgeLab();
  await ensureBaseImage();
  git = await startGitServer();
  // The periodic idle check never fires by itself here: the sleep test calls it with its own clock.
  server = await startTestServer(
    { ...lab.vars, SVC_BASE_DOMAIN: BASE },
    { edge: { checkIntervalMs: 1000, checkerTickMs: 250 }, sleep: { intervalMs: 3_600_000 } },
  );
  server.env.deployments.opts.healthTimeoutMs = 60_000;
  server.env.deployments.opts.settleMs = 1_500;
  c = await adminClient(server);
  return true;
}

/** A commit on `branch` of the repository (made from main when new); its hash. */
async function commitOn(branch: string, content: string): Promise<string> {
  const dir = join(git!.base, repo);
  const g = (...args: string[]) =>
    run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir });
  await g(
    'checkout',
    '-q',
    '-B',
    branch,
    branch === 'main'
      ? 'main'
      : await g('rev-parse', '--verify', '-q', branch)
          .then(() => branch)
          .catch(() => 'main'),
  );
  for (const [path, text] of Object.entries(webRepo(content, 'ENV X=1')))
    await writeFile(join(dir, path), text);
  await g('commit', '-q', '-am', content);
  const sha = (await g('rev-parse', 'HEAD')).stdout.trim();
  await g('checkout', '-q', 'main');
  return sha;
}

let n = 0;
function signedGithub(payload: unknown) {
  const body = Buffer.from(JSON.stringify(payload));
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': `pv-${++n}-${Date.now()}`,
      'x-hub-signature-256': 'sha256=' + createHmac('sha256', secret).update(body).digest('hex'),
    },
  };
}
function signedGitea(payload: unknown) {
  const body = Buffer.from(JSON.stringify(payload));
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-gitea-event': 'pull_request',
      'x-gitea-delivery': `pvg-${++n}-${Date.now()}`,
      'x-gitea-signature': createHmac('sha256', secret).update(body).digest('hex'),
    },
  };
}
// GitLab sends the secret itself (no signature); Bitbucket Cloud signs in the sha256= form.
function signedGitlab(payload: unknown) {
  const body = Buffer.from(JSON.stringify(payload));
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-gitlab-event': 'Merge Request Hook',
      'x-gitlab-token': secret,
      'x-gitlab-event-uuid': `pvl-${++n}-${Date.now()}`,
    },
  };
}
function signedBitbucket(event: string, payload: unknown) {
  const body = Buffer.from(JSON.stringify(payload));
  return {
    body,
    headers: {
      'content-type': 'application/json',
      'x-event-key': event,
      'x-request-uuid': `pvb-${++n}-${Date.now()}`,
      'x-hub-signature': 'sha256=' + createHmac('sha256', secret).update(body).digest('hex'),
    },
  };
}
async function deliver(d: { body: Buffer; headers: Record<string, string> }) {
  const res = await fetch(`${server!.url}/webhooks/${app.id}`, {
    method: 'POST',
    headers: d.headers,
    body: new Uint8Array(d.body),
  });
  const text = await res.text();
  return { status: res.status, body: text ? JSON.parse(text) : null };
}

/** The preview's status once its deployment has ended (running, else the log as the failure). */
async function previewRunning(pid: string, deploymentId: string): Promise<any> {
  return poll(
    'preview running',
    async () => {
      const r = await c.req('GET', `/api/apps/${app.id}/previews/${pid}`);
      assert.equal(r.status, 200, r.text);
      const p = r.body.preview;
      if (p.deployment_id !== deploymentId) return null;
      if (p.status === 'failed') {
        const logs = await c.req('GET', `/api/apps/${app.id}/previews/${pid}/logs`);
        throw new Error(`preview failed:\n${logs.body.items.map((l: any) => l.line).join('\n')}`);
      }
      return p.status === 'running' ? p : null;
    },
    240_000,
    500,
  );
}

async function answers(host: string, text: string): Promise<void> {
  await poll(
    `${host} answers ${text}`,
    async () => {
      const r = await lab!.https(host, '/').catch(() => null);
      return r && r.status === 200 && r.body === `${text}\n` ? r : null;
    },
    120_000,
    500,
  );
}

const prodHost = () => `${app.name}.${BASE}`;
const previewHost = (num: number) => `pr-${num}-${app.name}.${BASE}`;

async function engineObjects(name: string): Promise<string[]> {
  const docker = server!.env.engine.docker;
  const filters = { label: [`svc.app=${name}`] };
  const [cs, nets, vols, imgs] = await Promise.all([
    docker.listContainers({ all: true, filters }),
    docker.listNetworks({ filters }),
    docker.listVolumes({ filters }),
    docker.listImages({ filters }),
  ]);
  return [
    ...cs.map((x) => `container ${x.Names[0]}`),
    ...nets.map((x) => `network ${x.Name}`),
    ...(vols.Volumes ?? []).map((x) => `volume ${x.Name}`),
    ...imgs.map((x) => `image ${x.Id}`),
  ];
}

test('a pull request delivery (GitHub) deploys the preview of its branch on pr-<n>-<app> over HTTPS while production answers its own', async (t) => {
  if (!(await ready(t))) return;
  repo = `pv-${randomBytes(3).toString('hex')}`;
  await git!.commit(repo, webRepo('production v1', 'ENV X=1'), 'first');
  headSha = await commitOn('feature', 'preview v1');
  const name = `pv-${randomBytes(3).toString('hex')}`;
  const r = await c.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git!.url(repo), branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  app = r.body.app;
  for (const num of [7, 1000, 1001, 9]) engineNames.add(`${name}-pr-${num}`);
  engineNames.add(name);
  assert.equal(
    (await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080, health_path: '/' })).status,
    200,
  );
  const env = await c.req('PUT', `/api/apps/${app.id}/env`, {
    items: [
      { key: 'SHARED_TOKEN', value: 'inherited-value' },
      { key: 'PROD_DB_PASSWORD', value: 'production-only' },
    ],
  });
  assert.equal(env.status, 200, env.text);
  secret = (await c.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret;

  // Off by default: a delivery runs nothing.
  const off = await deliver(
    signedGithub(githubPullRequest('opened', { number: 7, head: 'feature', sha: headSha })),
  );
  assert.deepEqual([off.status, off.body], [200, { ignored: 'previews are off for this app' }]);

  const s = await c.req('PUT', `/api/apps/${app.id}/previews/settings`, {
    enabled: true,
    inherit_env: ['SHARED_TOKEN'],
  });
  assert.equal(s.status, 200, s.text);
  assert.deepEqual(s.body, {
    enabled: true,
    from_forks: false,
    ttl_hours: 72,
    max: 5,
    inherit_env: ['SHARED_TOKEN'],
    database: 'none',
    sleep_after_minutes: 30,
  });
  const pe = await c.req('PUT', `/api/apps/${app.id}/previews/env`, {
    items: [{ key: 'PREVIEW_ONLY', value: 'yes', secret: false }],
  });
  assert.equal(pe.status, 200, pe.text);

  const d = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(d.status, 202, d.text);
  await waitStatus(c, app.id, d.body.deployment.id, ['succeeded']);

  const opened = await deliver(
    signedGithub(githubPullRequest('opened', { number: 7, head: 'feature', sha: headSha })),
  );
  assert.equal(opened.status, 202, JSON.stringify(opened.body));
  const p = opened.body.preview;
  assert.equal(p.number, 7);
  assert.equal(p.branch, 'feature');
  assert.equal(p.commit, headSha);
  assert.equal(p.host, previewHost(7));
  assert.equal(p.url, `https://${previewHost(7)}`);
  const running = await previewRunning(p.id, p.deployment_id);
  assert.equal(running.sleeping, false);
  await answers(previewHost(7), 'preview v1');
  await answers(prodHost(), 'production v1');

  // The same signed delivery again under a new delivery id (a replay): the preview is live at
  // that commit, so nothing is redeployed.
  const replay = await deliver(
    signedGithub(githubPullRequest('opened', { number: 7, head: 'feature', sha: headSha })),
  );
  assert.equal(replay.status, 200, JSON.stringify(replay.body));
  assert.equal(replay.body.duplicate, true);
  assert.match(
    replay.body.reason,
    new RegExp(`^preview 7 is already live at commit ${headSha.slice(0, 12)}`),
  );
  assert.equal(
    (await c.req('GET', `/api/apps/${app.id}/previews/${p.id}`)).body.preview.deployment_id,
    p.deployment_id,
  );

  const log = await c.req('GET', `/api/apps/${app.id}/webhook/deliveries`);
  assert.equal(log.body.items[0].outcome, 'duplicate');
  const mine = log.body.items.find((i: any) => i.outcome === 'preview');
  assert.ok(mine, JSON.stringify(log.body.items));
  assert.equal(mine.deployment_id, p.deployment_id);
  assert.equal(mine.ref, 'feature');
  // The preview is not an app of its own in the API.
  assert.ok(
    !(await c.req('GET', '/api/apps')).body.items.some((a: any) => a.name.startsWith(`${app.name}-pr-`)),
  );
});

test('inside the preview: the inherited secret and the preview variable are there, the withheld secret is not', async (t) => {
  if (!(await ready(t)) || !app) return;
  const [ctr] = (await listAppContainers(server!.env.engine, `${app.name}-pr-7`)).filter(
    (x) => x.state === 'running',
  );
  assert.ok(ctr, 'a running preview container');
  const show = async (key: string) =>
    (
      await execIn(server!.env.engine, ctr.id, ['sh', '-c', `printf %s "\${${key}-unset}"`])
    ).stdout.toString();
  assert.equal(await show('SHARED_TOKEN'), 'inherited-value');
  assert.equal(await show('PREVIEW_ONLY'), 'yes');
  assert.equal(await show('PROD_DB_PASSWORD'), 'unset');
  // And production has neither preview variable.
  const [prod] = (await listAppContainers(server!.env.engine, app.name)).filter((x) => x.state === 'running');
  assert.equal(
    (
      await execIn(server!.env.engine, prod!.id, ['sh', '-c', 'printf %s "${PREVIEW_ONLY-unset}"'])
    ).stdout.toString(),
    'unset',
  );
});

test('isolation, probed from inside a preview container: production and another preview do not answer, its own service does', async (t) => {
  if (!(await ready(t)) || !app) return;
  const made = await c.req('POST', `/api/apps/${app.id}/previews`, { branch: 'feature' });
  assert.equal(made.status, 202, made.text);
  assert.equal(made.body.preview.number, 1000, 'the next free number from 1000');
  await previewRunning(made.body.preview.id, made.body.preview.deployment_id);
  const engine = server!.env.engine;
  const ipOf = async (appName: string) => {
    const [ctr] = (await listAppContainers(engine, appName)).filter((x) => x.state === 'running');
    const info = await engine.docker.getContainer(ctr!.id).inspect();
    return { id: ctr!.id, nets: info.NetworkSettings.Networks as Record<string, { IPAddress: string }> };
  };
  const prod = await ipOf(app.name);
  const other = await ipOf(`${app.name}-pr-1000`);
  const mine = await ipOf(`${app.name}-pr-7`);
  assert.deepEqual(
    Object.keys(mine.nets),
    [`svc-${app.name}-pr-7`],
    'the preview is on its own network only',
  );
  const probe = async (url: string) =>
    (await execIn(engine, mine.id, ['timeout', '5', 'wget', '-q', '-O', '-', url])).exitCode;
  assert.equal(await probe('http://app:8080/'), 0, 'its own service answers');
  for (const ip of Object.values(prod.nets).map((x) => x.IPAddress))
    assert.notEqual(await probe(`http://${ip}:8080/`), 0, `production at ${ip} must not answer`);
  for (const ip of Object.values(other.nets).map((x) => x.IPAddress))
    assert.notEqual(await probe(`http://${ip}:8080/`), 0, `preview 1000 at ${ip} must not answer`);
});

test('a fork delivery runs nothing', async (t) => {
  if (!(await ready(t)) || !app) return;
  const before = (await c.req('GET', `/api/apps/${app.id}/previews`)).body.items.length;
  const r = await deliver(
    signedGithub(githubPullRequest('opened', { number: 9, head: 'feature', sha: headSha, fork: true })),
  );
  assert.deepEqual([r.status, r.body], [200, { ignored: 'fork' }]);
  assert.equal((await c.req('GET', `/api/apps/${app.id}/previews`)).body.items.length, before);
  assert.deepEqual(await engineObjects(`${app.name}-pr-9`), []);
});

test('a Gitea synchronize delivery redeploys the preview from the new head of its branch', async (t) => {
  if (!(await ready(t)) || !app) return;
  await commitOn('feature', 'preview v2');
  const payload = giteaPullRequest('synchronized', { number: 7, head: 'feature' });
  // Same repository on both sides (the fixture's names), so not a fork.
  const r = await deliver(signedGitea(payload));
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await previewRunning(r.body.preview.id, r.body.preview.deployment_id);
  await answers(previewHost(7), 'preview v2');
  await answers(prodHost(), 'production v1');
});

test('GitLab and Bitbucket deliveries make the preview of their branch on its host; merged or declined remove it', async (t) => {
  if (!(await ready(t)) || !app) return;
  for (const forge of ['gitlab', 'bitbucket'] as const) {
    const number = forge === 'gitlab' ? 21 : 22;
    const open =
      forge === 'gitlab'
        ? signedGitlab(gitlabMergeRequest('open', { iid: number, source: 'feature', target: 'main' }))
        : signedBitbucket('pullrequest:created', bitbucketPullRequest({ id: number, source: 'feature' }));
    const r = await deliver(open);
    assert.equal(r.status, 202, `${forge}: ${JSON.stringify(r.body)}`);
    assert.equal(r.body.preview.number, number);
    await previewRunning(r.body.preview.id, r.body.preview.deployment_id);
    await answers(previewHost(number), 'preview v2');
    const end =
      forge === 'gitlab'
        ? signedGitlab(gitlabMergeRequest('merge', { iid: number, source: 'feature', target: 'main' }))
        : signedBitbucket('pullrequest:rejected', bitbucketPullRequest({ id: number, source: 'feature' }));
    const gone = await deliver(end);
    assert.equal(gone.status, 202, `${forge}: ${JSON.stringify(gone.body)}`);
    assert.equal(gone.body.preview.status, 'removed');
    assert.deepEqual(await engineObjects(`${app.name}-pr-${number}`), []);
  }
  await answers(prodHost(), 'production v1');
});

test('previews sleep by default: an idle preview stops, shows sleeping, and the first request to pr-<n>-<app> wakes it', async (t) => {
  if (!(await ready(t)) || !app) return;
  const db = server!.env.db;
  const childId = (
    await db
      .selectFrom('previews')
      .select('target_app_id')
      .where('app_id', '=', app.id)
      .where('number', '=', 7)
      .executeTakeFirstOrThrow()
  ).target_app_id;
  const later = (minutes: number) => Date.now() + minutes * 60_000;
  const sleeper = server!.env.sleeper;
  assert.deepEqual(await sleeper.check(later(29)), [], 'not idle for 30 minutes yet');
  const slept = await sleeper.check(later(31));
  assert.ok(slept.includes(childId), `preview 7 sleeps: ${JSON.stringify(slept)}`);
  assert.ok(!slept.includes(app.id), 'production has no sleep setting and runs on');
  const running = async (name: string) =>
    (await listAppContainers(server!.env.engine, name)).filter((x) => x.state === 'running').length;
  assert.equal(await running(`${app.name}-pr-7`), 0, 'its containers are stopped');
  assert.ok((await running(app.name)) > 0);
  const list = (await c.req('GET', `/api/apps/${app.id}/previews`)).body.items;
  const seven = list.find((p: any) => p.number === 7);
  assert.deepEqual([seven.status, seven.sleeping], ['sleeping', true]);
  await answers(prodHost(), 'production v1');
  // The first request through Caddy is held while the preview wakes and answered by the preview.
  const r = await lab!.https(previewHost(7), '/');
  assert.equal(r.status, 200, r.body);
  assert.equal(r.body, 'preview v2\n');
  const woke = (await c.req('GET', `/api/apps/${app.id}/previews/${seven.id}`)).body.preview;
  assert.deepEqual([woke.status, woke.sleeping], ['running', false]);
  assert.equal(await running(`${app.name}-pr-7`), 1);

  // Preview 1000 slept too; turning preview sleep off wakes it, as for an app.
  const other = list.find((p: any) => p.number === 1000);
  assert.equal(other.sleeping, true);
  const off = await c.req('PUT', `/api/apps/${app.id}/previews/settings`, {
    enabled: true,
    inherit_env: ['SHARED_TOKEN'],
    sleep_after_minutes: null,
  });
  assert.equal(off.status, 200, off.text);
  const again = (await c.req('GET', `/api/apps/${app.id}/previews/${other.id}`)).body.preview;
  assert.deepEqual([again.status, again.sleeping], ['running', false]);
  assert.equal(await running(`${app.name}-pr-1000`), 1);
});

test('a closed pull request leaves nothing on the engine and no rows; DELETE and the expiry sweep remove the others', async (t) => {
  if (!(await ready(t)) || !app) return;
  const childId = (
    await server!.env.db
      .selectFrom('previews')
      .select('target_app_id')
      .where('number', '=', 7)
      .executeTakeFirstOrThrow()
  ).target_app_id;
  const closed = await deliver(
    signedGithub(githubPullRequest('closed', { number: 7, head: 'feature', sha: headSha })),
  );
  assert.equal(closed.status, 202, JSON.stringify(closed.body));
  assert.equal(closed.body.preview.status, 'removed');
  assert.deepEqual(await engineObjects(`${app.name}-pr-7`), []);
  const db = server!.env.db;
  assert.equal(
    await db.selectFrom('previews').select('id').where('number', '=', 7).executeTakeFirst(),
    undefined,
  );
  assert.equal(
    await db.selectFrom('apps').select('id').where('id', '=', childId).executeTakeFirst(),
    undefined,
  );
  assert.equal(
    (await db.selectFrom('app_env').select('key').where('app_id', '=', childId).execute()).length,
    0,
  );
  await poll(
    'preview host no longer routed',
    async () => {
      const res = await lab!.https(previewHost(7), '/').catch(() => null);
      return !res || res.status !== 200 || res.body !== 'preview v2\n';
    },
    60_000,
    500,
  );
  await answers(prodHost(), 'production v1');

  // DELETE while its deployment runs: canceled, then everything goes.
  const made = await c.req('POST', `/api/apps/${app.id}/previews`, { branch: 'feature', number: 1001 });
  assert.equal(made.status, 202, made.text);
  const del = await c.req('DELETE', `/api/apps/${app.id}/previews/${made.body.preview.id}`);
  assert.equal(del.status, 200, del.text);
  assert.deepEqual(await engineObjects(`${app.name}-pr-1001`), []);

  // Preview 1000 expires after 72 hours: the sweep (clock injected) removes it.
  assert.deepEqual(await sweepExpired(server!.env, Date.now() + 71 * 3600_000), []);
  const swept = await sweepExpired(server!.env, Date.now() + 73 * 3600_000);
  assert.equal(swept.length, 1);
  assert.deepEqual(await engineObjects(`${app.name}-pr-1000`), []);
  assert.deepEqual((await c.req('GET', `/api/apps/${app.id}/previews`)).body.items, []);
});
