// A git app's svc.yaml on the local git server, deployed with the real `svc` client: the file's
// settings applied (seen from inside the container), recorded on the deployment; a declared
// secret the app lacks and an invalid file each fail the deployment with their reason while the
// old version keeps serving. `svc deploy --follow` exits with the outcome; `svc logs` prints.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needDocker } from '../_support/docker.js';
import { ADMIN, Client, apiToken, type TestServer } from '../_support/server.js';
import { runCli } from '../_support/cli.js';
import { startDeployServer, webRepo, callInApp, waitStatus, cleanupApp, type GitServer } from './_deploy.js';

let git: GitServer;
let s: TestServer;
let admin: Client;
let vars: Record<string, string>;
let home = '';
const APP = 'cfg-file-app';

const SERVE = `echo started-$GREETING; echo $GREETING > /www/greeting; trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait`;
const svcYaml = (extra = '') =>
  [
    'services:',
    '  app:',
    '    port: 8080',
    '    health_path: /index.html',
    `    command: ["sh", "-c", ${JSON.stringify(SERVE)}]`,
    'sleep_after_minutes: 45',
    'release_command: ["sh", "-c", "echo release-ran"]',
    'jobs:',
    '  - name: nightly',
    '    schedule: "0 3 * * *"',
    '    command: echo nightly',
    'env:',
    '  GREETING: hello-from-file',
    '  API_KEY: {secret: true, description: the key of the upstream API}',
    extra,
  ].join('\n') + '\n';

before(async () => {
  ({ git, s, admin } = await startDeployServer());
  home = await mkdtemp(join(tmpdir(), 'svc-cfg-home-'));
  vars = {
    HOME: home,
    XDG_CONFIG_HOME: join(home, '.config'),
    SVC_URL: s.url,
    SVC_TOKEN: await apiToken(admin, 'cli'),
  };
});
after(async () => {
  await cleanupApp(s.env.engine, APP).catch(() => {});
  await s?.stop();
  await git?.stop();
  if (home) await rm(home, { recursive: true, force: true });
});

let appId = '';

test('svc.yaml is applied at deploy: port, health path, command, sleep and env defaults', async (t) => {
  if (!(await needDocker(t))) return;
  await git.commit('cfg', { ...webRepo('v1'), 'svc.yaml': svcYaml() }, 'with svc.yaml');
  const made = await admin.req('POST', '/api/apps', {
    name: APP,
    source: { type: 'git', repo_url: git.url('cfg'), branch: 'main' },
  });
  assert.equal(made.status, 201, made.text);
  appId = made.body.app.id;
  const missing = await runCli(['deploy', APP, '--follow'], vars, 300_000);
  assert.equal(missing.code, 1, 'the declared secret is missing: the deployment fails');
  assert.match(missing.stderr, /^svc deploy: deployment \S+ failed: svc\.yaml declares the secret API_KEY/);
  assert.equal(missing.stderr.trim().split('\n').length, 1, 'one line on stderr');
  const set = await runCli(['env', APP, 'set', 'API_KEY=k-123', '--secret'], vars);
  assert.equal(set.code, 0, set.stderr);
  const ok = await runCli(['deploy', APP, '--follow'], vars, 300_000);
  assert.equal(ok.code, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout, /svc\.yaml: applied /, 'the live log names what the file applied');
  assert.match(ok.stdout, /succeeded$/m);
  assert.equal(await callInApp(s.env.engine, APP, 'http://app:8080/greeting'), 'hello-from-file\n');
  const deps = await admin.req('GET', `/api/apps/${appId}/deployments`);
  const last = deps.body.items[0];
  assert.equal(last.status, 'succeeded');
  assert.equal(last.config.file, 'svc.yaml');
  assert.deepEqual(Object.keys(last.config.applied).sort(), [
    'env.API_KEY',
    'env.GREETING',
    'jobs.nightly',
    'release_command',
    'services.app.command',
    'services.app.health_path',
    'services.app.port',
    'sleep_after_minutes',
  ]);
  const app = (await admin.req('GET', `/api/apps/${appId}`)).body.app;
  assert.equal(app.sleep_after_minutes, 45);
  const svc = (await admin.req('GET', `/api/apps/${appId}/services`)).body.items.find(
    (x: any) => x.name === 'app',
  );
  assert.deepEqual([svc.port, svc.health_path], [8080, '/index.html']);
  assert.equal(last.config.applied['jobs.nightly'], 'created');
  const runs = (await admin.req('GET', `/api/apps/${appId}/runs`)).body.items;
  const release = runs.find((r: any) => r.trigger === 'release');
  assert.deepEqual([release?.status, release?.command], ['succeeded', ['sh', '-c', 'echo release-ran']]);
  const jobs = await runCli(['jobs', APP, '--json'], vars);
  assert.equal(jobs.code, 0, jobs.stderr);
  assert.deepEqual(
    (JSON.parse(jobs.stdout) as Array<{ name: string; command: string[] }>).map((j) => [j.name, j.command]),
    [['nightly', ['echo', 'nightly']]],
  );
  // A one-off command: its output streamed, its exit status the CLI's (a token that stepped up).
  const tc = new Client(s.url);
  tc.bearer = vars.SVC_TOKEN!;
  assert.equal((await tc.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const run = await runCli(['run', APP, '--', 'sh', '-c', 'echo out-$GREETING; exit 3'], vars, 120_000);
  assert.equal(run.code, 3, run.stdout + run.stderr);
  assert.match(run.stdout, /^out-hello-from-file$/m);
  const logs = await runCli(['logs', APP, '--service', 'app'], vars, 60_000);
  assert.equal(logs.code, 0, logs.stderr);
  assert.match(logs.stdout, /^app \| started-hello-from-file$/m);
});

test('a missing declared secret and an invalid file fail with their reason; the old version keeps serving', async (t) => {
  if (!(await needDocker(t))) return;
  assert.ok(appId, 'the first test deployed the app');
  await git.commit('cfg', { 'svc.yaml': svcYaml('  SIGNING_KEY: {secret: true}') }, 'a new secret');
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  const failed = await waitStatus(admin, appId, r.body.deployment.id, ['failed']);
  assert.match(failed.error, /SIGNING_KEY/);
  assert.doesNotMatch(failed.error, /API_KEY/, 'only the missing one is named');
  assert.equal(await callInApp(s.env.engine, APP, 'http://app:8080/greeting'), 'hello-from-file\n');

  await git.commit('cfg', { 'svc.yaml': 'services:\n  app:\n    port: 99999\n' }, 'an invalid file');
  const bad = await runCli(['deploy', APP, '--follow'], vars, 300_000);
  assert.equal(bad.code, 1);
  assert.match(bad.stderr, /invalid svc\.yaml:3:11: services\.app\.port: /, 'line and column');
  assert.equal(await callInApp(s.env.engine, APP, 'http://app:8080/greeting'), 'hello-from-file\n');
});
