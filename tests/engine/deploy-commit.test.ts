// Deploying one commit of a git app (`POST /api/apps/{id}/deployments {commit}`) against the real
// engine and a real git server: an older commit by abbreviated hash while the branch has moved on
// (the shallow history is deepened to find it), a commit that is not on the branch (refused with
// a readable reason, the running version untouched), and input that is not a hash (400).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { needDocker, ensureBaseImage, dockerReachable, BASE_IMAGE } from '../_support/docker.js';
import { startTestServer, adminClient, type Client, type TestServer } from '../_support/server.js';
import { listAppContainers } from '#lib/docker/index.js';
import { startGitServer, webRepo, callInApp, waitStatus, cleanupApp, type GitServer } from './_deploy.js';

const run = promisify(execFile);
let s: TestServer;
let admin: Client;
let git: GitServer | undefined;
const apps = new Set<string>();

before(async () => {
  if (!(await dockerReachable())) return;
  await ensureBaseImage();
  git = await startGitServer();
  s = await startTestServer();
  admin = await adminClient(s);
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_500;
});

after(async () => {
  if (s) {
    for (const a of apps) await cleanupApp(s.env.engine, a);
    await s.stop();
  }
  await git?.stop();
});

const uniq = () => randomBytes(3).toString('hex');

/** A commit on a branch other than main (main stays checked out in the served repository). */
async function commitOnBranch(repo: string, branch: string): Promise<string> {
  const dir = join(git!.base, repo);
  const g = (...args: string[]) =>
    run('git', ['-c', 'user.name=t', '-c', 'user.email=t@example.com', ...args], { cwd: dir });
  await g('checkout', '-q', '-b', branch);
  await writeFile(join(dir, 'index.html'), 'not on main\n');
  await g('commit', '-q', '-am', `only on ${branch}`);
  const sha = (await g('rev-parse', 'HEAD')).stdout.trim();
  await g('checkout', '-q', 'main');
  return sha;
}

async function runningIds(app: string): Promise<string[]> {
  return (await listAppContainers(s.env.engine, app))
    .filter((c) => c.state === 'running')
    .map((c) => c.id)
    .sort();
}

test('a commit of the branch deploys by abbreviated hash while the branch has moved on; one off the branch fails and changes nothing', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `pin-${uniq()}`;
  const first = await git!.commit(repo, webRepo('commit one'), 'first');
  const second = await git!.commit(repo, webRepo('commit two'), 'second');
  const stray = await commitOnBranch(repo, 'other');
  const name = `pin-${uniq()}`;
  apps.add(name);
  const created = await admin.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git!.url(repo), branch: 'main' },
  });
  assert.equal(created.status, 201, created.text);
  const app = created.body.app;
  assert.equal(
    (await admin.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080, health_path: '/' })).status,
    200,
  );

  // main's head is `second`; the abbreviated hash of `first` is not in a depth-1 fetch.
  const r1 = await admin.req('POST', `/api/apps/${app.id}/deployments`, { commit: first.slice(0, 7) });
  assert.equal(r1.status, 202, r1.text);
  assert.equal(r1.body.deployment.ref, 'main');
  const d1 = await waitStatus(admin, app.id, r1.body.deployment.id, ['succeeded']);
  assert.equal(d1.commit, first, 'the row records the full resolved hash');
  assert.equal(d1.commit_subject, 'first');
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'commit one\n');
  const log1 = (
    await admin.req('GET', `/api/apps/${app.id}/deployments/${d1.id}/logs?limit=500`)
  ).body.items.map((l: any) => l.line);
  assert.ok(
    log1.some((l: string) => l.includes(`commit ${first.slice(0, 7)} is not in what was fetched of main`)),
    log1.join('\n'),
  );
  const live = await runningIds(app.name);
  assert.ok(live.length > 0);

  // A commit the server has, but on another branch: refused after the whole history of main was searched.
  const r2 = await admin.req('POST', `/api/apps/${app.id}/deployments`, {
    commit: stray.slice(0, 10).toUpperCase(),
  });
  assert.equal(r2.status, 202, r2.text);
  const d2 = await waitStatus(admin, app.id, r2.body.deployment.id, ['failed']);
  assert.match(d2.error, new RegExp(`commit ${stray.slice(0, 10)} is not on the history of main`));
  assert.equal(d2.commit, null);
  assert.equal(d2.image, null);
  assert.deepEqual(await runningIds(app.name), live, 'the running version is untouched');
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'commit one\n');
  const app2 = await admin.req('GET', `/api/apps/${app.id}`);
  assert.equal(app2.body.app.status, 'running');

  // The reused working copy: the full hash of the head deploys from it.
  const r3 = await admin.req('POST', `/api/apps/${app.id}/deployments`, { commit: second });
  assert.equal(r3.status, 202, r3.text);
  const d3 = await waitStatus(admin, app.id, r3.body.deployment.id, ['succeeded']);
  assert.equal(d3.commit, second);
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'commit two\n');
});

test('a commit that is not a hash is a 400 naming the field and queues nothing; an image app has no commit to deploy', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `pinbad-${uniq()}`;
  await git!.commit(repo, webRepo('bad input'), 'only');
  const name = `pinbad-${uniq()}`;
  apps.add(name);
  const created = await admin.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git!.url(repo), branch: 'main' },
  });
  assert.equal(created.status, 201, created.text);
  const id = created.body.app.id;
  const bad: unknown[] = [
    'xyz1234',
    '123',
    '--upload-pack=touch /tmp/x',
    '-- abcd',
    'abcd --',
    'HEAD~1',
    'abc1234^{tree}',
    'a'.repeat(41),
    '',
    ' abcd1234',
    1234567,
    null,
  ];
  for (const commit of bad) {
    const r = await admin.req('POST', `/api/apps/${id}/deployments`, { commit });
    assert.equal(r.status, 400, `${JSON.stringify(commit)}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request', r.text);
    assert.equal(r.body.details?.[0]?.field, 'commit', r.text);
  }
  assert.deepEqual((await admin.req('GET', `/api/apps/${id}/deployments`)).body.items, []);

  const imageName = `pinimg-${uniq()}`;
  apps.add(imageName);
  const img = await admin.req('POST', '/api/apps', {
    name: imageName,
    source: { type: 'image', image: BASE_IMAGE },
  });
  assert.equal(img.status, 201, img.text);
  const r = await admin.req('POST', `/api/apps/${img.body.app.id}/deployments`, { commit: 'abcdef1' });
  assert.equal(r.status, 400, r.text);
  assert.equal(r.body.details?.[0]?.field, 'commit', r.text);
  assert.deepEqual((await admin.req('GET', `/api/apps/${img.body.app.id}/deployments`)).body.items, []);
});
