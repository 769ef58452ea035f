// Disaster recovery end to end on the real engine and the real edge: instance A runs a web app
// (image source, a busybox web server, a secret env var) served through a real Caddy on a domain
// with a certificate from Pebble, and an app with a Postgres database backed up to S3; Caddy keeps
// its storage where A's SVC_CADDY_STORAGE says, so the instance backup to S3 holds the certificate.
// Then the server is lost: A stops, every engine object of A goes (containers, the database's
// volume, networks, by A's instance label), Caddy stops and its storage directory is deleted. On a
// fresh data directory `svc restore-instance` puts A back (the certificate storage where the new
// Caddy keeps it), a fresh Caddy starts on it with an empty config, and B starts on the same master
// key: recovery re-creates the database from its backup and redeploys the web app; the domain
// answers over HTTPS through Caddy with the very certificate A had (same fingerprint, not a new
// one from Pebble), the app sees the same secret, the database has its rows, and the same API
// token and the same operator's password work.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { mkdtemp, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '#lib/config.js';
import { createEnv } from '../../../runtime/boot.js';
import { startServer } from '../../../runtime/server.js';
import { startBackground } from '../../../runtime/background.js';
import { createLogger } from '#lib/log.js';
import type { EdgeOptions } from '#lib/proxy/edge.js';
import {
  adminClient,
  apiToken,
  startTestServer,
  ADMIN,
  TEST_MASTER_KEY,
  Client,
  type TestServer,
} from '../../_support/server.js';
import { startS3, S3_KEY } from '../../_support/s3.js';
import { ensureBaseImage, BASE_IMAGE } from '../../_support/docker.js';
import { needDbImages } from '../../_support/dbimages.js';
import { runCli } from '../../_support/cli.js';
import { needEdge, startEdgeLab, type EdgeLab, type FetchResult } from '../../_support/edge.js';
import { dbImageMap, newApp, provisionDb, psql, runBackup } from '../_data.js';
import { execIn, until } from '../_helpers.js';
import { waitStatus } from '../_deploy.js';
import { listAppContainers } from '#lib/docker/index.js';
import { deleteApp } from '#lib/apps/ops.js';
import { settleJobs } from '#lib/backups/jobs.js';

const sh = promisify(execFile);
const WEB_IMAGE = 'svc-test/web:dr';

const WEB_HOST = 'shop.dr.test';
// The checker probes hosts often, so a restored host's state settles in seconds.
const EDGE: EdgeOptions = { checkIntervalMs: 1000, checkerTickMs: 250 };

async function bootOn(dataDir: string, vars: Record<string, string>): Promise<TestServer> {
  const config = loadConfig({
    SVC_DATA_DIR: dataDir,
    SVC_HOST: '127.0.0.1',
    SVC_PORT: '0',
    SVC_MASTER_KEY: TEST_MASTER_KEY,
    SVC_PASSWORD_COST: '14',
    SVC_AUTH_RATE_LIMIT: '1000',
    SVC_LOG_LEVEL: 'silent',
    SVC_ACCESS_LOG: join(dataDir, 'access.log'),
    SVC_SECURITY_DIR: join(dataDir, 'security'),
    SVC_PROXY: 'off',
    ...vars,
  });
  const env = await createEnv(config, { log: createLogger(config.logLevel), edge: EDGE });
  const running = await startServer(env);
  startBackground(env, running);
  return { env, running, url: running.url, dataDir, stop: () => running.close() };
}

/** Everything on the engine labelled with this instance: what a lost server takes with it. */
async function wipeInstance(a: TestServer): Promise<void> {
  const id = a.env.engine.owner.instanceId;
  const d = a.env.engine.docker;
  const filters = { label: [`svc.instance=${id}`] };
  for (const c of await d.listContainers({ all: true, filters }))
    await d.getContainer(c.Id).remove({ force: true, v: true });
  for (const v of (await d.listVolumes({ filters })).Volumes ?? [])
    await d.getVolume(v.Name).remove({ force: true });
  for (const n of await d.listNetworks({ filters })) await d.getNetwork(n.Id).remove();
}

/** The page WEB_HOST serves through Caddy over HTTPS (real TLS, SNI), once it is the web app's. */
function servedPage(lab: EdgeLab): Promise<FetchResult> {
  return until(
    `${WEB_HOST} over HTTPS through Caddy`,
    async () => {
      const r = await lab.https(WEB_HOST);
      return r.status === 200 && r.body.trim() === 'dr-hello' ? r : null;
    },
    120_000,
    250,
  );
}

test('disaster recovery: instance A lost with its Caddy, restored on B from its S3 backup; apps, certificate, secrets, rows and token come back', async (t) => {
  if (!(await needEdge(t))) return;
  const images = await needDbImages(t);
  if (!images) return;
  await ensureBaseImage();
  await sh('sh', [
    '-c',
    'printf "FROM %s\\nRUN mkdir -p /www && echo dr-hello > /www/index.html\\nCMD [\\"httpd\\", \\"-f\\", \\"-p\\", \\"8080\\", \\"-h\\", \\"/www\\"]\\n" "$1" | docker build -q -t "$2" -',
    'sh',
    BASE_IMAGE,
    WEB_IMAGE,
  ]);
  const lab = await startEdgeLab();
  const s3 = await startS3().catch(async (e) => {
    await lab.stop();
    throw e;
  });
  // A and B both name the storage the lab's Caddy uses: the control plane and Caddy agree on it.
  const vars = {
    ...lab.vars,
    SVC_CADDY_STORAGE: lab.caddyStorage,
    SVC_IMAGE_MAP: JSON.stringify(dbImageMap(images, ['postgres'])),
  };
  let a: TestServer | null = null;
  let b: TestServer | null = null;
  const bDir = await mkdtemp(join(tmpdir(), 'svc-dr-b-'));
  const appIds: string[] = [];
  try {
    a = await startTestServer(vars, { edge: EDGE });
    const c = await adminClient(a);
    const token = await apiToken(c, 'dr');
    const s3Dest = {
      type: 's3',
      endpoint: s3.endpoint,
      region: 'us-east-1',
      bucket: s3.bucket,
      access_key_id: S3_KEY.id,
      secret_access_key: 'dr-secret',
      path_style: true,
    };

    const web = (
      await c.req('POST', '/api/apps', {
        name: `drweb-${Math.random().toString(36).slice(2, 7)}`,
        source: { type: 'image', image: WEB_IMAGE },
      })
    ).body.app;
    appIds.push(web.id);
    assert.equal((await c.req('PATCH', `/api/apps/${web.id}/services/app`, { port: 8080 })).status, 200);
    assert.equal(
      (
        await c.req('PUT', `/api/apps/${web.id}/env`, {
          items: [{ key: 'SECRET_WORD', value: 'swordfish', secret: true }],
        })
      ).status,
      200,
    );
    const dep = await c.req('POST', `/api/apps/${web.id}/deployments`, {});
    assert.equal(dep.status, 202, dep.text);
    await waitStatus(c, web.id, dep.body.deployment.id, ['succeeded']);
    const dom = await c.req('POST', `/api/apps/${web.id}/domains`, { hostname: WEB_HOST, service: 'app' });
    assert.equal(dom.status, 201, dom.text);
    const before = await servedPage(lab);
    assert.match(String(before.cert?.issuer?.CN ?? ''), /Pebble/, 'the certificate comes from the ACME CA');
    const fingerprint = before.cert!.fingerprint256;
    assert.ok(fingerprint);

    const dbApp = await newApp(c, appIds, 'drdb');
    const db = await provisionDb(c, dbApp.id, 'postgres', '15');
    await psql(
      a,
      c,
      dbApp,
      images.postgres,
      "CREATE TABLE notes (id int primary key, body text); INSERT INTO notes SELECT g, 'note ' || g FROM generate_series(1, 25) g;",
    );
    const cfg = await c.req('POST', `/api/apps/${dbApp.id}/backups`, {
      source: { type: 'database', database_id: db.id },
      schedule: '0 3 * * *',
      keep_last: 3,
      destination: { ...s3Dest, prefix: 'apps' },
    });
    assert.equal(cfg.status, 201, cfg.text);
    assert.equal((await runBackup(c, dbApp.id, cfg.body.backup.id)).status, 'succeeded');

    assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
    assert.equal(
      (await c.req('PUT', '/api/instance/backup', { destination: { ...s3Dest, prefix: 'instance' } })).status,
      200,
    );
    const run = await c.req('POST', '/api/instance/backup/run');
    const done = await until('instance backup', async () => {
      const x = (await c.req('GET', `/api/instance/backup/runs/${run.body.run.id}`)).body.run;
      return x.status !== 'running' && x.verified_at ? x : null;
    });
    assert.equal(done.status, 'succeeded');
    assert.equal(done.notes, null, "Caddy's storage is in the backup");

    // The server is lost: the process, everything it had on the engine, Caddy and its storage.
    await settleJobs();
    await a.running.close();
    await wipeInstance(a);
    await lab.killCaddy('SIGTERM');
    await rm(lab.caddyStorage, { recursive: true, force: true });
    await assert.rejects(stat(lab.caddyStorage), { code: 'ENOENT' });

    const restored = await runCli(
      [
        'restore-instance',
        `s3://${s3.bucket}/instance/instance/${done.id}.svcbak`,
        '--key',
        TEST_MASTER_KEY,
        '--s3-endpoint',
        s3.endpoint,
        '--s3-access-key-id',
        S3_KEY.id,
        '--s3-secret-access-key-env',
        'DR_SECRET',
        '--path-style',
      ],
      { SVC_DATA_DIR: bDir, SVC_PORT: '1', SVC_CADDY_STORAGE: lab.caddyStorage, DR_SECRET: 'dr-secret' },
    );
    assert.equal(restored.code, 0, restored.stderr);
    assert.match(restored.stdout, /restored Caddy's certificate storage/);

    // A fresh Caddy (the admin endpoint only, as its service starts on a new host) on the restored storage.
    await lab.startCaddy();
    b = await bootOn(bDir, vars);
    const bc = new Client(b.url);
    bc.bearer = token;
    const report = await until(
      'recovery',
      async () => {
        const r = await bc.req('GET', '/api/instance/recovery');
        assert.notEqual(r.status, 401, 'the same API token works');
        return r.status === 200 && r.body.finished_at ? r.body : null;
      },
      600_000,
      1000,
    );
    const by = (id: string) => report.items.find((i: any) => i.id === id);
    assert.equal(by(db.id)?.outcome, 'restored', JSON.stringify(report.items));
    assert.equal(by(web.id)?.outcome, 'redeployed', JSON.stringify(report.items));
    assert.equal(by(dbApp.id)?.outcome, 'skipped', JSON.stringify(report.items));

    const [ct] = (await listAppContainers(b.env.engine, web.name)).filter((x) => x.state === 'running');
    assert.ok(ct, 'the web app runs again');
    const page = await until('web answers', async () => {
      const r = await execIn(b!.env.engine, ct.id, ['wget', '-q', '-O', '-', 'http://127.0.0.1:8080/']);
      return r.exitCode === 0 ? r.stdout.toString() : null;
    });
    assert.match(page, /dr-hello/);
    const secret = await execIn(b.env.engine, ct.id, ['sh', '-c', 'echo "$SECRET_WORD"']);
    assert.equal(secret.stdout.toString().trim(), 'swordfish');
    assert.equal(
      await psql(b, bc, dbApp, images.postgres, "SELECT count(*) || ':' || max(body) FROM notes"),
      '25:note 9',
    );

    // Through the new Caddy, over HTTPS: the app, with the certificate A had (a new order would show another).
    const after = await servedPage(lab);
    assert.equal(after.cert?.fingerprint256, fingerprint, 'the same certificate, from the restored storage');
    const operator = await new Client(b.url).req('POST', '/api/auth/login', ADMIN);
    assert.equal(operator.status, 200, 'the operator signs in with the same password');
  } finally {
    await settleJobs();
    const env = (b ?? a)?.env;
    if (env) for (const id of appIds) await deleteApp(env, id, { volumes: true }).catch(() => {});
    await b?.stop().catch(() => {});
    await a?.stop().catch(() => {});
    await s3.stop();
    await lab.stop();
    await rm(bDir, { recursive: true, force: true });
  }
});
