// Managed databases and their backups over the real server and the real engine, with local
// images of PostgreSQL, MariaDB and Redis mapped over the catalog's references (SVC_IMAGE_MAP).
// For each engine: provision, write through the app's env URL from a client container on the
// app's network, back up, change the data, restore, read the original back; verify passes on a
// good artifact, and a tampered artifact is refused without restoring anything.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFile, stat, writeFile } from 'node:fs/promises';
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { adminClient, reveal, type Client, type TestServer } from '../_support/server.js';
import { needDbImages, type DbImages } from '../_support/dbimages.js';
import {
  addDatabase,
  dbReady,
  newApp as newAppIn,
  restoreRun,
  runBackup,
  runInAppNetwork,
  startDataServer,
  stepUp as stepUpIn,
  stopDataServer,
  verifyRun,
} from './_data.js';
import type { BusEvent } from '#lib/events/bus.js';

let s: TestServer;
let c: Client;
let images: DbImages | null = null;
const apps: string[] = [];
const events: BusEvent[] = [];

before(async () => {
  s = await startDataServer(['postgres', 'mariadb', 'redis']);
  c = await adminClient(s);
  s.env.bus.subscribe('backups', (e) => events.push(e));
});
after(() => stopDataServer(s, apps));

async function ready(t: Parameters<typeof needDbImages>[0]): Promise<boolean> {
  images = await needDbImages(t);
  return images !== null;
}

const newApp = () => newAppIn(c, apps, 'dt');
const stepUp = () => stepUpIn(c);

async function provision(appId: string, engine: string, version: string): Promise<any> {
  const created = await addDatabase(c, appId, engine, version);
  assert.equal(created.status, 'provisioning');
  return dbReady(c, appId, engine, created.id);
}

/** Runs a client container on the app's network with the app's env URL, like the app would. */
async function clientRun(
  app: { id: string; name: string },
  image: string,
  envVar: string,
  script: string,
): Promise<string> {
  const url = (await reveal(c, app.id, envVar)).body.value as string;
  return runInAppNetwork(s, app, image, ['sh', '-c', script], [`URL=${url}`]);
}

async function backupOnce(appId: string, source: object, keep = 3): Promise<{ bid: string; run: any }> {
  const r = await c.req('POST', `/api/apps/${appId}/backups`, {
    source,
    schedule: '0 3 * * *',
    keep_last: keep,
  });
  assert.equal(r.status, 201, r.text);
  const bid = r.body.backup.id;
  return { bid, run: await runOnce(appId, bid) };
}

const runOnce = (appId: string, bid: string) => runBackup(c, appId, bid);
const restore = (appId: string, rid: string) => restoreRun(c, appId, rid);
const verify = (appId: string, rid: string) => verifyRun(c, appId, rid);

function artifactPath(appId: string, rid: string): string {
  return join(s.dataDir, 'backups', appId, `${rid}.svcbak`);
}

test('postgres: provision, env URL, backup, change, restore, verify, tamper refused, delete', async (t) => {
  if (!(await ready(t))) return;
  const app = await newApp();
  const db = await provision(app.id, 'postgres', '15');
  assert.equal(db.env_var, 'DATABASE_URL');
  const env = await c.req('GET', `/api/apps/${app.id}/env`);
  assert.deepEqual(
    env.body.items.find((i: any) => i.key === 'DATABASE_URL'),
    { key: 'DATABASE_URL', secret: true, value: null },
  );
  // Never published on the host.
  const info = await s.env.engine.docker.getContainer(`svc-${app.name}-db-${db.id.slice(-8)}`).inspect();
  assert.deepEqual(Object.values(info.NetworkSettings.Ports ?? {}).filter(Boolean), []);
  assert.deepEqual(Object.keys(info.NetworkSettings.Networks), [`svc-${app.name}`]);

  const img = images!.postgres;
  await clientRun(
    app,
    img,
    'DATABASE_URL',
    `psql "$URL" -v ON_ERROR_STOP=1 -c "CREATE TABLE notes (id int primary key, body text); INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 500) g;"`,
  );
  const { bid, run } = await backupOnce(app.id, { type: 'database', database_id: db.id });
  assert.equal(run.status, 'succeeded', run.error);
  const file = artifactPath(app.id, run.id);
  const st = await stat(file);
  assert.equal(st.mode & 0o777, 0o600);
  assert.equal(
    createHash('sha256')
      .update(await readFile(file))
      .digest('hex'),
    run.sha256,
  );
  assert.equal(st.size, run.size_bytes);
  assert.ok(
    events.some((e) => (e.data as any).type === 'backup_succeeded' && (e.data as any).run_id === run.id),
  );

  // The download is the decrypted gzip of a pg_dump custom-format archive.
  const dl = await fetch(`${s.url}/api/apps/${app.id}/backups/runs/${run.id}/download`, {
    headers: { cookie: c.cookieHeader() },
  });
  assert.equal(dl.status, 200);
  assert.match(dl.headers.get('content-disposition') ?? '', /attachment; filename=/);
  assert.equal(
    gunzipSync(Buffer.from(await dl.arrayBuffer()))
      .subarray(0, 5)
      .toString(),
    'PGDMP',
  );

  await clientRun(
    app,
    img,
    'DATABASE_URL',
    `psql "$URL" -v ON_ERROR_STOP=1 -c "DELETE FROM notes WHERE id > 10; UPDATE notes SET body = 'changed';"`,
  );
  const rs = await restore(app.id, run.id);
  assert.equal(rs.status, 'succeeded', rs.error);
  const back = await clientRun(
    app,
    img,
    'DATABASE_URL',
    `psql "$URL" -At -c "SELECT count(*), min(body) FROM notes"`,
  );
  assert.equal(back, '500|note 1');
  const audit = await s.env.db
    .selectFrom('audit')
    .select('action')
    .where('action', '=', 'backup.restore_finished')
    .execute();
  assert.ok(audit.length >= 1);
  assert.ok(events.some((e) => (e.data as any).type === 'restore_finished'));

  const v = await verify(app.id, run.id);
  assert.ok(v.verified_at, v.verify_error);

  // Tamper with one byte in the middle: download refused, restore fails and changes nothing.
  const bytes = await readFile(file);
  bytes[Math.floor(bytes.length / 2)] ^= 0x01;
  await writeFile(file, bytes);
  await clientRun(
    app,
    img,
    'DATABASE_URL',
    `psql "$URL" -v ON_ERROR_STOP=1 -c "UPDATE notes SET body = 'after tamper' WHERE id = 1"`,
  );
  const bad = await c.req('GET', `/api/apps/${app.id}/backups/runs/${run.id}/download`);
  assert.equal(bad.status, 409, bad.text);
  assert.match(bad.body.error, /authentication/);
  const rs2 = await restore(app.id, run.id);
  assert.equal(rs2.status, 'failed');
  assert.match(rs2.error, /authentication/);
  assert.equal(
    await clientRun(app, img, 'DATABASE_URL', `psql "$URL" -At -c "SELECT body FROM notes WHERE id = 1"`),
    'after tamper',
  );
  const v2 = await verify(app.id, run.id);
  assert.match(v2.verify_error ?? '', /authentication/);

  // Inventory lists it with a size; delete needs a step-up and keeps the volume when asked.
  const inv = await c.req('GET', '/api/databases');
  const mine = inv.body.items.find((x: any) => x.id === db.id);
  assert.ok(mine.size_bytes > 0, JSON.stringify(mine));
  const over = await c.req('GET', '/api/backups');
  assert.ok(over.body.configs.some((x: any) => x.id === bid));
  assert.ok(!over.body.uncovered.some((u: any) => u.database_id === db.id));
  const fresh = await adminClient(s);
  const denied = await fresh.req('DELETE', `/api/apps/${app.id}/databases/${db.id}?keep_data=true`);
  assert.equal(denied.status, 403);
  assert.equal(denied.body.code, 'step_up_required');
  await stepUp();
  const del = await c.req('DELETE', `/api/apps/${app.id}/databases/${db.id}?keep_data=true`);
  assert.equal(del.status, 200, del.text);
  await s.env.engine.docker.getVolume(del.body.kept_volume).inspect();
  await assert.rejects(s.env.engine.docker.getContainer(info.Id).inspect());
  assert.equal(
    (await c.req('GET', `/api/apps/${app.id}/env`)).body.items.some((i: any) => i.key === 'DATABASE_URL'),
    false,
  );
});

test('mariadb: write through the env URL, backup, change, restore, verify; a stopped container fails the run with its reason', async (t) => {
  if (!(await ready(t))) return;
  const app = await newApp();
  const db = await provision(app.id, 'mariadb', '10.11');
  const url = new URL((await reveal(c, app.id, 'DATABASE_URL')).body.value);
  assert.equal(url.protocol, 'mysql:');
  const sql = (q: string) =>
    clientRun(
      app,
      images!.mariadb,
      'DATABASE_URL',
      // The URL's parts, taken apart by the shell from the env var the app gets (no secret on a command line).
      `u="\${URL#mysql://}"; creds="\${u%%@*}"; hostpart="\${u#*@}"; export MYSQL_PWD="\${creds#*:}"; mariadb -h "\${hostpart%%:*}" -u "\${creds%%:*}" -N -B "\${hostpart##*/}" -e "${q}"`,
    );
  await sql(
    "CREATE TABLE items (id INT PRIMARY KEY, name VARCHAR(40)) ENGINE=InnoDB; INSERT INTO items VALUES (1,'one'),(2,'two'),(3,'three');",
  );
  const { bid, run } = await backupOnce(app.id, { type: 'database', database_id: db.id });
  assert.equal(run.status, 'succeeded', run.error);
  await sql("DELETE FROM items WHERE id > 1; UPDATE items SET name='changed';");
  const rs = await restore(app.id, run.id);
  assert.equal(rs.status, 'succeeded', rs.error);
  assert.equal(await sql('SELECT GROUP_CONCAT(name ORDER BY id) FROM items'), 'one,two,three');
  const v = await verify(app.id, run.id);
  assert.ok(v.verified_at, v.verify_error);

  // The database container stopped: the run fails, says why, and leaves no artifact.
  const ct = s.env.engine.docker.getContainer(`svc-${app.name}-db-${db.id.slice(-8)}`);
  await ct.stop();
  const failed = await runOnce(app.id, bid);
  assert.equal(failed.status, 'failed');
  assert.match(failed.error, /not running/);
  await assert.rejects(stat(artifactPath(app.id, failed.id)));
  await stat(artifactPath(app.id, run.id));
  assert.ok(
    events.some((e) => (e.data as any).type === 'backup_failed' && (e.data as any).run_id === failed.id),
  );
  const over = await c.req('GET', '/api/backups');
  assert.ok(over.body.failed_last_7d.some((r: any) => r.id === failed.id));
});

test('redis: write, backup, change, restore, verify (DBSIZE)', async (t) => {
  if (!(await ready(t))) return;
  const app = await newApp();
  const db = await provision(app.id, 'redis', '7');
  assert.equal(db.env_var, 'REDIS_URL');
  const cli = (args: string) =>
    clientRun(app, images!.redis, 'REDIS_URL', `redis-cli --no-auth-warning -u "$URL" ${args}`);
  await cli('MSET a 1 b 2 c 3');
  const { run } = await backupOnce(app.id, { type: 'database', database_id: db.id });
  assert.equal(run.status, 'succeeded', run.error);
  await cli('FLUSHALL');
  await cli('SET z 26');
  const rs = await restore(app.id, run.id);
  assert.equal(rs.status, 'succeeded', rs.error);
  // z (written after the backup) is gone: its empty reply trims away.
  assert.equal(await cli('MGET a b c z'), '1\n2\n3');
  const v = await verify(app.id, run.id);
  assert.ok(v.verified_at, v.verify_error);

  // The database dies with its app: container gone, and its volume too when the app's volumes go.
  const name = `svc-${app.name}-db-${db.id.slice(-8)}`;
  await stepUp();
  const del = await c.req('DELETE', `/api/apps/${app.id}?volumes=true`);
  assert.equal(del.status, 200, del.text);
  await assert.rejects(s.env.engine.docker.getContainer(name).inspect());
  await assert.rejects(s.env.engine.docker.getVolume(`svc-${app.name}_db-${db.id.slice(-8)}`).inspect());
  assert.equal(
    (await c.req('GET', '/api/databases')).body.items.some((x: any) => x.id === db.id),
    false,
  );
});
