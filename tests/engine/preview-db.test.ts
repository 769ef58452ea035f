// A preview's own database (`database: "empty"`) over the real server and the real engine, with the
// local Redis image mapped over the catalog's reference: the preview gets a new database of the
// app's engine on its own network under the app's variable name, never production's URL (even when
// the variable is inherited or set preview-only), keeps it across a redeploy, and loses it with
// the preview. Its deployment makes it (not the request); a restore that fails fails that
// deployment and leaves nothing; an instance recovery brings a preview back as a preview.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { adminClient, reveal, type Client, type TestServer } from '../_support/server.js';
import { needDbImages } from '../_support/dbimages.js';
import { ensureBaseImage } from '../_support/docker.js';
import { poll } from '../_support/wait.js';
import {
  startDataServer,
  stopDataServer,
  addDatabase,
  dbReady,
  runBackup,
  runInAppNetwork,
} from './_data.js';
import { startGitServer, webRepo, cleanupApp, type GitServer } from './_deploy.js';
import { execIn } from './_helpers.js';
import { listAppContainers, LABEL_DATABASE_APP } from '#lib/docker/index.js';
import { runRecovery } from '#lib/instance/recovery.js';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';

let s: TestServer | null = null;
let git: GitServer | null = null;
const apps: string[] = [];
const names: string[] = [];
// Shared by the tests, in order: the server, the app with its Redis, production's REDIS_URL.
let c: Client;
let app: { id: string; name: string } | null = null;
let parentUrl = '';
let redisImage = '';
let backupRun: { id: string; artifact: string } | null = null;

after(async () => {
  if (s) {
    for (const n of names) await cleanupApp(s.env.engine, n);
    await stopDataServer(s, apps);
  }
  await git?.stop();
});

async function previewRunning(c: Client, appId: string, pid: string, deploymentId: string): Promise<void> {
  await poll(
    'preview running',
    async () => {
      const p = (await c.req('GET', `/api/apps/${appId}/previews/${pid}`)).body.preview;
      if (p.deployment_id !== deploymentId) return null;
      if (p.status === 'failed') {
        const logs = await c.req('GET', `/api/apps/${appId}/previews/${pid}/logs`);
        throw new Error(`preview failed:\n${logs.body.items.map((l: any) => l.line).join('\n')}`);
      }
      return p.status === 'running' ? p : null;
    },
    240_000,
    500,
  );
}

// Talks to the Redis its REDIS_URL names, from inside the preview's container, as the app would:
// AUTH, then `commands` (constant words), one a line.
const redisScript = (commands: string[]) =>
  [
    'u=${REDIS_URL#redis://default:}; pw=${u%%@*}; hp=${u#*@}; hp=${hp%%/*}',
    `printf 'AUTH %s\\r\\n${commands.join('\\r\\n')}\\r\\n' "$pw" | nc -w 3 "\${hp%%:*}" "\${hp##*:}"`,
  ].join('\n');

const dbContainers = async (child: string) =>
  (
    await s!.env.engine.docker.listContainers({
      all: true,
      filters: { label: [`${LABEL_DATABASE_APP}=${child}`] },
    })
  ).map((x) => x.Names[0]);

/** REDIS_URL inside the preview's running container, and Redis's answer to `commands` through it. */
async function inPreview(child: string, commands: string[]): Promise<{ url: string; talk: string }> {
  const engine = s!.env.engine;
  const [ctr] = (await listAppContainers(engine, child)).filter((x) => x.state === 'running');
  assert.ok(ctr, 'a running preview container');
  const url = (await execIn(engine, ctr.id, ['sh', '-c', 'printf %s "$REDIS_URL"'])).stdout.toString();
  const talk = (await execIn(engine, ctr.id, ['sh', '-c', redisScript(commands)])).stdout.toString();
  return { url, talk: talk.replace(/\r/g, '') };
}

test('database "empty": the preview gets its own Redis under REDIS_URL, kept on redeploy, gone with the preview', async (t) => {
  const images = await needDbImages(t);
  if (!images) return;
  redisImage = images.redis;
  await ensureBaseImage();
  git = await startGitServer();
  s = await startDataServer(['redis']);
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_500;
  c = await adminClient(s);
  const engine = s.env.engine;

  const repo = `pvdb-${randomBytes(3).toString('hex')}`;
  await git.commit(repo, webRepo('v1'), 'first');
  const name = `pvdb-${randomBytes(3).toString('hex')}`;
  const r = await c.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git.url(repo), branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  app = r.body.app as { id: string; name: string };
  apps.push(app.id);
  const child = `${name}-pr-5`;
  names.push(child, name);
  assert.equal(
    (await c.req('PATCH', `/api/apps/${app.id}/services/app`, { port: 8080, health_path: '/' })).status,
    200,
  );
  const db = await addDatabase(c, app.id, 'redis', '7');
  await dbReady(c, app.id, 'redis', db.id);
  parentUrl = (await reveal(c, app.id, 'REDIS_URL')).body.value as string;
  assert.match(parentUrl, /^redis:\/\//);

  // Production's URL is asked for twice (inherited and preview-only): the preview's own wins.
  const set = await c.req('PUT', `/api/apps/${app.id}/previews/settings`, {
    enabled: true,
    database: 'empty',
    inherit_env: ['REDIS_URL'],
    sleep_after_minutes: null,
  });
  assert.equal(set.status, 200, set.text);
  const penv = await c.req('PUT', `/api/apps/${app.id}/previews/env`, {
    items: [{ key: 'REDIS_URL', value: parentUrl }],
  });
  assert.equal(penv.status, 200, penv.text);

  const made = await c.req('POST', `/api/apps/${app.id}/previews`, { branch: 'main', number: 5 });
  assert.equal(made.status, 202, made.text);
  const pid = made.body.preview.id;
  await previewRunning(c, app.id, pid, made.body.preview.deployment_id);

  const first = await inPreview(child, ['SET k preview', 'GET k']);
  assert.match(first.url, /^redis:\/\/default:[^@]+@redis-[a-z0-9]+:6379\/0$/);
  assert.notEqual(first.url, parentUrl);
  assert.equal(first.talk, '+OK\n+OK\n$7\npreview\n');
  assert.equal((await dbContainers(child)).length, 1);

  // A redeploy keeps the same database and its URL.
  const again = await c.req('POST', `/api/apps/${app.id}/previews`, { branch: 'main', number: 5 });
  assert.equal(again.status, 202, again.text);
  await previewRunning(c, app.id, pid, again.body.preview.deployment_id);
  assert.equal((await inPreview(child, ['SET k preview', 'GET k'])).url, first.url);
  assert.equal((await dbContainers(child)).length, 1);

  // Two database rows: production's and the preview's.
  assert.equal((await s.env.db.selectFrom('app_databases').select('id').execute()).length, 2);

  const del = await c.req('DELETE', `/api/apps/${app.id}/previews/${pid}`);
  assert.ok(del.status === 200 || del.status === 204, del.text);
  assert.deepEqual(await dbContainers(child), []);
  const vols = await engine.docker.listVolumes({ filters: { label: [`svc.app=${child}`] } });
  assert.deepEqual(vols.Volumes ?? [], []);
  const rows = await s.env.db.selectFrom('app_databases').select('app_id').execute();
  assert.deepEqual(
    rows.map((x) => x.app_id),
    [app.id],
  );
});

test('database "latest_backup": the preview\'s own Redis starts with the app\'s latest backup', async (t) => {
  if (!(await needDbImages(t)) || !app) return;
  const db = (await c.req('GET', `/api/apps/${app.id}/databases`)).body.items[0];
  await runInAppNetwork(
    s!,
    app,
    redisImage,
    ['sh', '-c', 'redis-cli -u "$URL" SET origin production'],
    [`URL=${parentUrl}`],
  );
  const b = await c.req('POST', `/api/apps/${app.id}/backups`, {
    source: { type: 'database', database_id: db.id },
    schedule: '0 3 * * *',
    keep_last: 3,
  });
  assert.equal(b.status, 201, b.text);
  const run = await runBackup(c, app.id, b.body.backup.id);
  assert.equal(run.status, 'succeeded', JSON.stringify(run));
  backupRun = (await s!.env.db
    .selectFrom('backup_runs')
    .select(['id', 'artifact'])
    .where('id', '=', run.id)
    .executeTakeFirstOrThrow()) as { id: string; artifact: string };
  const set = await c.req('PUT', `/api/apps/${app.id}/previews/settings`, {
    enabled: true,
    database: 'latest_backup',
    inherit_env: [],
    sleep_after_minutes: null,
  });
  assert.equal(set.status, 200, set.text);
  const child = `${app.name}-pr-6`;
  names.push(child);
  const made = await c.req('POST', `/api/apps/${app.id}/previews`, { branch: 'main', number: 6 });
  assert.equal(made.status, 202, made.text);
  await previewRunning(c, app.id, made.body.preview.id, made.body.preview.deployment_id);
  const seen = await inPreview(child, ['GET origin']);
  assert.notEqual(seen.url, parentUrl);
  assert.equal(seen.talk, '+OK\n$10\nproduction\n');
  const del = await c.req('DELETE', `/api/apps/${app.id}/previews/${made.body.preview.id}`);
  assert.ok(del.status === 200 || del.status === 204, del.text);
  assert.deepEqual(await dbContainers(child), []);
});

test('recovery after an instance restore brings a preview back as a preview, its lost database made again', async (t) => {
  if (!(await needDbImages(t)) || !app) return;
  const set = await c.req('PUT', `/api/apps/${app.id}/previews/settings`, {
    enabled: true,
    database: 'empty',
    inherit_env: [],
    sleep_after_minutes: null,
  });
  assert.equal(set.status, 200, set.text);
  const child = `${app.name}-pr-9`;
  names.push(child);
  const made = await c.req('POST', `/api/apps/${app.id}/previews`, { branch: 'main', number: 9 });
  assert.equal(made.status, 202, made.text);
  await previewRunning(c, app.id, made.body.preview.id, made.body.preview.deployment_id);
  const before = await inPreview(child, ['PING']);

  // The new host has none of the preview's engine objects: its database container and volume neither.
  for (const ctr of await s!.env.engine.docker.listContainers({
    all: true,
    filters: { label: [`${LABEL_DATABASE_APP}=${child}`] },
  }))
    await s!.env.engine.docker.getContainer(ctr.Id).remove({ force: true, v: true });
  await cleanupApp(s!.env.engine, child);

  const report = await runRecovery(s!.env);
  const { target_app_id: childId } = await s!.env.db
    .selectFrom('previews')
    .select('target_app_id')
    .where('id', '=', made.body.preview.id)
    .executeTakeFirstOrThrow();
  const item = report.items.find((i) => i.kind === 'app' && i.id === childId);
  assert.equal(item?.outcome, 'redeployed', JSON.stringify(report.items));
  assert.match(item!.detail, new RegExp(`^as preview 9 of app ${app.name}, from the head of main`));
  const dbItem = report.items.find((i) => i.kind === 'database' && i.name.startsWith(`${child}/`));
  assert.equal(dbItem?.outcome, 'skipped', JSON.stringify(report.items));
  const after = await inPreview(child, ['SET k back', 'GET k']);
  assert.equal(after.talk, '+OK\n+OK\n$4\nback\n');
  assert.notEqual(after.url, before.url, "a new database, made by the preview's deployment");
  assert.equal((await dbContainers(child)).length, 1);
  const del = await c.req('DELETE', `/api/apps/${app.id}/previews/${made.body.preview.id}`);
  assert.ok(del.status === 200 || del.status === 204, del.text);
});

test('database "latest_backup" whose restore fails: the preview\'s deployment fails saying why and leaves no database', async (t) => {
  if (!(await needDbImages(t)) || !app || !backupRun) return;
  const set = await c.req('PUT', `/api/apps/${app.id}/previews/settings`, {
    enabled: true,
    database: 'latest_backup',
    inherit_env: [],
    sleep_after_minutes: null,
  });
  assert.equal(set.status, 200, set.text);
  // The latest backup's artifact is damaged on its destination: it can no longer be opened.
  await writeFile(join(s!.dataDir, 'backups', backupRun.artifact), 'not an artifact');
  const child = `${app.name}-pr-8`;
  names.push(child);
  const made = await c.req('POST', `/api/apps/${app.id}/previews`, { branch: 'main', number: 8 });
  assert.equal(made.status, 202, made.text);
  const pid = made.body.preview.id;
  const failed = await poll(
    'preview deployment failed',
    async () => {
      const p = (await c.req('GET', `/api/apps/${app!.id}/previews/${pid}`)).body.preview;
      if (p.status === 'running') throw new Error('the preview deployed');
      return p.status === 'failed' ? p : null;
    },
    240_000,
    500,
  );
  assert.equal(failed.deployment_id, made.body.preview.deployment_id);
  const lines = (await c.req('GET', `/api/apps/${app.id}/previews/${pid}/logs`)).body.items.map(
    (l: any) => l.line,
  );
  const reason = `preview database REDIS_URL (redis 7) could not be made: the restore of the app's backup run ${backupRun.id} failed`;
  assert.ok(
    lines.some((l: string) => l.startsWith(`failed: ${reason}`)),
    lines.join('\n'),
  );
  const dep = await s!.env.db
    .selectFrom('deployments')
    .select('error')
    .where('id', '=', failed.deployment_id)
    .executeTakeFirstOrThrow();
  assert.ok(dep.error?.startsWith(reason), dep.error ?? '');
  // Nothing of the attempt is left: no database container, volume or row, no app container.
  assert.deepEqual(await dbContainers(child), []);
  assert.deepEqual(await listAppContainers(s!.env.engine, child), []);
  const vols = await s!.env.engine.docker.listVolumes({ filters: { label: [`svc.app=${child}`] } });
  assert.deepEqual(vols.Volumes ?? [], []);
  const childId = (
    await s!.env.db
      .selectFrom('previews')
      .select('target_app_id')
      .where('id', '=', pid)
      .executeTakeFirstOrThrow()
  ).target_app_id;
  assert.deepEqual(
    await s!.env.db.selectFrom('app_databases').select('id').where('app_id', '=', childId).execute(),
    [],
  );
  const del = await c.req('DELETE', `/api/apps/${app.id}/previews/${pid}`);
  assert.ok(del.status === 200 || del.status === 204, del.text);
});
