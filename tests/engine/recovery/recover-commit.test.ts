// Recovery rebuilds a git app whose images are gone at the commit its last successful deployment
// recorded, not at whatever its branch points at now: the restored instance comes back with the
// version that ran. Real engine, real git server; the lost engine objects are removed by hand.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { needDocker, ensureBaseImage } from '../../_support/docker.js';
import { startTestServer, adminClient, type TestServer } from '../../_support/server.js';
import { startGitServer, webRepo, callInApp, waitStatus, cleanupApp, type GitServer } from '../_deploy.js';
import { runRecovery } from '#lib/instance/recovery.js';

let s: TestServer | undefined;
let git: GitServer | undefined;
let appName: string | undefined;

after(async () => {
  if (s && appName) await cleanupApp(s.env.engine, appName);
  await s?.stop();
  await git?.stop();
});

test('recovery rebuilds a git app at the commit of its last successful deployment, not at the branch head', async (t) => {
  if (!(await needDocker(t))) return;
  await ensureBaseImage();
  git = await startGitServer();
  s = await startTestServer();
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_500;
  const c = await adminClient(s);
  const repo = `dr-${randomBytes(3).toString('hex')}`;
  const ran = await git.commit(repo, webRepo('the version that ran'), 'ran');
  appName = `drpin-${randomBytes(3).toString('hex')}`;
  const created = await c.req('POST', '/api/apps', {
    name: appName,
    source: { type: 'git', repo_url: git.url(repo), branch: 'main' },
  });
  assert.equal(created.status, 201, created.text);
  const app = created.body.app;
  assert.equal(
    (await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080, health_path: '/' })).status,
    200,
  );
  const dep = await c.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(dep.status, 202, dep.text);
  assert.equal((await waitStatus(c, app.id, dep.body.deployment.id, ['succeeded'])).commit, ran);

  // The branch moves on, then the engine loses the app (containers, network and built images).
  await git.commit(repo, webRepo('pushed after the backup'), 'later');
  await cleanupApp(s.env.engine, appName);

  const report = await runRecovery(s.env);
  const item = report.items.find((i) => i.id === app.id);
  assert.equal(item?.outcome, 'redeployed', JSON.stringify(report.items));
  const list = (await c.req('GET', `/api/apps/${app.id}/deployments`)).body.items;
  assert.equal(list[0].status, 'succeeded');
  assert.notEqual(list[0].id, dep.body.deployment.id);
  assert.equal(list[0].commit, ran, 'the recorded commit was deployed again');
  assert.match(
    item.detail,
    new RegExp(`at commit ${ran.slice(0, 12)} of main, the commit of deployment ${dep.body.deployment.id}`),
  );
  assert.equal(await callInApp(s.env.engine, appName, 'http://app:8080/'), 'the version that ran\n');
});
