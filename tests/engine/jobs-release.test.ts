// The release command against the real engine and a real git server: it runs once per
// deployment, in the new image with the new environment, before the new version takes traffic,
// its output in the deployment log as `release` lines; a non-zero exit or a timeout fails the
// deployment while the old version answers every request; a rollback does not run it.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { dockerReachable, needDocker } from '../_support/docker.js';
import type { Client, TestServer } from '../_support/server.js';
import { listAppContainers } from '#lib/docker/index.js';
import { startDeployServer, webRepo, callInApp, waitStatus, cleanupApp, type GitServer } from './_deploy.js';

let git: GitServer;
let s: TestServer;
let c: Client;
const apps = new Set<string>();

before(async () => {
  if (!(await dockerReachable())) return;
  ({ git, s, admin: c } = await startDeployServer());
});

after(async () => {
  if (s) {
    for (const a of apps) await cleanupApp(s.env.engine, a);
    await s.stop();
  }
  await git?.stop();
});

async function deploy(appId: string, body: unknown = {}): Promise<string> {
  const r = await c.req('POST', `/api/apps/${appId}/deployments`, body);
  assert.equal(r.status, 202, r.text);
  return r.body.deployment.id;
}

async function logOf(appId: string, did: string): Promise<Array<{ stream: string; line: string }>> {
  return (await c.req('GET', `/api/apps/${appId}/deployments/${did}/logs?limit=5000`)).body.items;
}

async function setEnv(appId: string, mode: string): Promise<void> {
  const r = await c.req('PUT', `/api/apps/${appId}/env`, {
    items: [{ key: 'MODE', value: mode, secret: false }],
  });
  assert.equal(r.status, 200, r.text);
}

async function release(appId: string, command: string[] | null, timeout?: number): Promise<void> {
  const r = await c.req('PATCH', `/api/apps/${appId}`, {
    release_command: command,
    ...(timeout ? { release_timeout_s: timeout } : {}),
  });
  assert.equal(r.status, 200, r.text);
}

test('the release command runs once per deployment in the new image and env; a failing one or a timeout fails the deployment while the old version serves; a rollback skips it', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `rel-${randomBytes(3).toString('hex')}`;
  const name = `rel-${randomBytes(3).toString('hex')}`;
  apps.add(name);
  await git.commit(repo, webRepo('hello v1'));
  const made = await c.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git.url(repo), branch: 'main' },
  });
  assert.equal(made.status, 201, made.text);
  const id = made.body.app.id;
  assert.equal(
    (await c.req('PATCH', `/api/apps/${id}/services/app`, { port: 8080, health_path: '/' })).status,
    200,
  );
  const probe = ['sh', '-c', 'echo "release sees $(cat /www/index.html) with MODE=$MODE"'];
  await release(id, probe);

  await setEnv(id, 'one');
  const d1 = await deploy(id);
  await waitStatus(c, id, d1, ['succeeded']);
  const log1 = await logOf(id, d1);
  assert.deepEqual(
    log1.filter((l) => l.stream === 'release').map((l) => l.line),
    ['release sees hello v1 with MODE=one'],
  );
  const runs1 = (await c.req('GET', `/api/apps/${id}/runs`)).body.items as any[];
  assert.equal(runs1.length, 1);
  assert.equal(runs1[0].trigger, 'release');
  assert.equal(runs1[0].deployment_id, d1);
  assert.equal(runs1[0].status, 'succeeded');
  // Before any new container: the release line comes before the first container is created.
  const at = (re: RegExp) => log1.findIndex((l) => re.test(l.line));
  assert.ok(at(/^release sees/) < at(/app: created /), 'released before the new container exists');

  await git.commit(repo, webRepo('hello v2'));
  await setEnv(id, 'two');
  const d2 = await deploy(id);
  await waitStatus(c, id, d2, ['succeeded']);
  assert.deepEqual(
    (await logOf(id, d2)).filter((l) => l.stream === 'release').map((l) => l.line),
    ['release sees hello v2 with MODE=two'],
    'the new image, the new environment',
  );
  assert.equal(await callInApp(s.env.engine, name, 'http://app:8080/'), 'hello v2\n');

  // A failing release: the deployment fails, v2 answers every request meanwhile and after.
  await release(id, ['sh', '-c', 'echo migrating; exit 4']);
  await git.commit(repo, webRepo('hello v3'));
  const d3 = await deploy(id);
  const answers: Array<string | null> = [];
  for (;;) {
    answers.push(await callInApp(s.env.engine, name, 'http://app:8080/'));
    const st = (await c.req('GET', `/api/apps/${id}/deployments/${d3}`)).body.deployment;
    if (['succeeded', 'failed', 'canceled', 'interrupted'].includes(st.status)) break;
  }
  const failed = (await c.req('GET', `/api/apps/${id}/deployments/${d3}`)).body.deployment;
  assert.equal(failed.status, 'failed');
  assert.match(failed.error, /release command exited with code 4/);
  assert.ok(answers.length >= 2);
  assert.deepEqual(new Set(answers), new Set(['hello v2\n']), 'the old version answered every request');
  assert.deepEqual(
    (await logOf(id, d3)).filter((l) => l.stream === 'release').map((l) => l.line),
    ['migrating'],
  );
  assert.equal((await listAppContainers(s.env.engine, name, { deployment: d3 })).length, 0);
  assert.equal(await callInApp(s.env.engine, name, 'http://app:8080/'), 'hello v2\n');

  // A release that outlives its time limit fails the deployment the same way.
  await release(id, ['sleep', '60'], 2);
  const d4 = await deploy(id);
  const timed = await waitStatus(c, id, d4, ['failed']);
  assert.match(timed.error, /release command ran longer than its timeout of 2 s/);
  assert.equal(await callInApp(s.env.engine, name, 'http://app:8080/'), 'hello v2\n');

  // A rollback reuses what was released: the (failing) release command does not run.
  const back = await c.req('POST', `/api/apps/${id}/deployments/${d1}/rollback`);
  assert.equal(back.status, 202, back.text);
  await waitStatus(c, id, back.body.deployment.id, ['succeeded']);
  assert.equal((await logOf(id, back.body.deployment.id)).filter((l) => l.stream === 'release').length, 0);
  const runs = (await c.req('GET', `/api/apps/${id}/runs`)).body.items as any[];
  assert.ok(
    !runs.some((r) => r.deployment_id === back.body.deployment.id),
    'no release run for the rollback',
  );
  assert.equal(await callInApp(s.env.engine, name, 'http://app:8080/'), 'hello v1\n');
});
