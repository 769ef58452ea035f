// `svc rotate-master-key` with the real CLI and a real `svc serve` on one data directory: every
// sealed value moves to the new key (the service starts with it and reads them), a value that does
// not open leaves everything under the old key, a crash between the commit and the key file is
// named at boot and finished by a second run, and a running service refuses the rotation.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, stat, readdir, writeFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve, serveFails, runCli } from '../../_support/cli.js';
import { Client, ADMIN } from '../../_support/server.js';
import { totpCode } from '#lib/auth/totp.js';
import { openDb, type Db } from '#lib/db/index.js';
import { createSealer, type Sealer } from '#lib/crypto/seal.js';
import { rotateWebhookSecret, webhookSecret } from '#lib/webhooks/store.js';
import { regenerateKey, privateKey } from '#lib/keys/store.js';
import { channelBinding } from '#lib/notify/store.js';
import { s3Binding } from '#lib/backups/config.js';
import { getApp } from '#lib/apps/store.js';
import { envBinding } from '#lib/apps/env.js';
import { unopenableEverywhere } from '#lib/instance/rekey.js';
import { isMasked } from '#lib/audit/kinds.js';

const dirs: string[] = [];
after(async () => {
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

const keyOf = async (dataDir: string) =>
  Buffer.from((await readFile(join(dataDir, 'master.key'), 'utf8')).trim(), 'hex');

async function withDb<T>(dataDir: string, fn: (db: Db) => Promise<T>): Promise<T> {
  const db = openDb(dataDir);
  try {
    return await fn(db);
  } finally {
    await db.destroy();
  }
}

/** Every sealed column, as stored: to show that a refused rotation changed nothing. */
async function sealedSnapshot(db: Db): Promise<string> {
  const parts = await Promise.all([
    db.selectFrom('settings').selectAll().orderBy('key').execute(),
    db.selectFrom('users').select(['id', 'totp_secret', 'totp_pending']).orderBy('id').execute(),
    db.selectFrom('app_env').selectAll().orderBy('key').execute(),
    db.selectFrom('app_webhooks').selectAll().execute(),
    db.selectFrom('app_ssh_keys').selectAll().execute(),
    db.selectFrom('notification_channels').select(['id', 'url_sealed']).execute(),
    db.selectFrom('instance_backup').select(['id', 'secret_sealed']).execute(),
    db.selectFrom('audit').select(['id', 'state_before', 'state_after']).orderBy('id').execute(),
    db.selectFrom('recovery_codes').selectAll().orderBy('id').execute(),
  ]);
  return JSON.stringify(parts);
}

interface Seeded {
  dataDir: string;
  vars: Record<string, string>;
  appId: string;
  totpSecret: string;
  webhook: string;
  deployKey: string;
}

/**
 * A data directory whose key file the first boot wrote, holding a secret of every kind: TOTP (with
 * recovery codes), environment variables (and their audit states), a webhook secret, a deploy key,
 * a notification channel URL and the instance backup's S3 secret.
 */
async function seeded(): Promise<Seeded> {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-rotate-'));
  dirs.push(dataDir);
  const vars = {
    SVC_DATA_DIR: dataDir,
    SVC_PASSWORD_COST: '14',
    SVC_PROXY: 'off',
    SVC_AUTH_RATE_LIMIT: '1000',
  };
  const svc = await serve(vars);
  let appId: string;
  let totpSecret: string;
  try {
    const c = new Client(svc.url);
    const token = (await readFile(join(dataDir, 'setup.token'), 'utf8')).trim();
    assert.equal((await c.req('POST', '/api/setup/admin', { token, ...ADMIN })).status, 201);
    assert.equal((await c.req('POST', '/api/auth/login', ADMIN)).status, 200);
    assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
    totpSecret = (await c.req('POST', '/api/auth/totp/setup')).body.secret;
    assert.equal(
      (await c.req('POST', '/api/auth/totp/enable', { code: await totpCode(totpSecret) })).status,
      200,
    );
    const app = await c.req('POST', '/api/apps', {
      name: 'rotated',
      source: { type: 'image', image: 'nginx:1.27' },
    });
    assert.equal(app.status, 201, app.text);
    appId = app.body.app.id;
    for (const value of ['first-secret', 'second-secret']) {
      const r = await c.req('PUT', `/api/apps/${appId}/env`, {
        items: [
          { key: 'API_KEY', value, secret: true },
          { key: 'MODE', value: 'prod', secret: false },
        ],
      });
      assert.equal(r.status, 200, r.text);
    }
  } finally {
    await svc.stop();
  }
  const sealer = createSealer(await keyOf(dataDir));
  const seededValues = await withDb(dataDir, async (db) => {
    const webhook = await rotateWebhookSecret(db, sealer, appId);
    await regenerateKey(db, sealer, await getApp(db, appId));
    const deployKey = await privateKey(db, sealer, appId);
    const now = new Date().toISOString();
    await db
      .insertInto('notification_channels')
      .values({
        id: 'ch1',
        kind: 'discord',
        name: 'ops',
        url_sealed: sealer.seal('https://hooks.example.test/secret-path', channelBinding('ch1')),
        url_hint: 'hooks.example.test',
        events: '[]',
        enabled: 1,
        last_delivery: null,
        created_at: now,
        updated_at: now,
      })
      .execute();
    await db
      .insertInto('instance_backup')
      .values({
        id: 'instance',
        schedule: '0 3 * * *',
        keep_last: 3,
        destination: JSON.stringify({ type: 's3', bucket: 'b', endpoint: 'http://127.0.0.1:1' }),
        secret_sealed: sealer.seal('s3-secret-key', s3Binding('instance')),
        enabled: 0,
        last_scheduled_at: now,
        created_at: now,
        updated_at: now,
      })
      .execute();
    return { webhook, deployKey: deployKey! };
  });
  return { dataDir, vars, appId: appId!, totpSecret: totpSecret!, ...seededValues };
}

let main: Seeded;
before(async () => {
  main = await seeded();
});

test('a value that does not open: refused, naming where it is; the database and the key file are as they were', async () => {
  const s = await seeded();
  const oldKey = await keyOf(s.dataDir);
  const snapshot = await withDb(s.dataDir, async (db) => {
    // Corrupt the last value the rotation would reach: everything before it was already re-sealed in the transaction.
    const row = await db.selectFrom('instance_backup').select('secret_sealed').executeTakeFirstOrThrow();
    await db
      .updateTable('instance_backup')
      .set({ secret_sealed: row.secret_sealed!.slice(0, -4) + 'AAAA' })
      .execute();
    return sealedSnapshot(db);
  });
  const r = await runCli(['rotate-master-key'], s.vars);
  assert.equal(r.code, 1, r.stdout);
  assert.match(
    r.stderr,
    /the instance backup destination secret: instance_backup row instance does not open with the current master key; nothing was changed/,
  );
  assert.doesNotMatch(r.stderr + r.stdout, /s3-secret-key/);
  assert.deepEqual(await keyOf(s.dataDir), oldKey);
  assert.deepEqual(
    (await readdir(s.dataDir)).filter((f) => f.startsWith('master.key')),
    ['master.key'],
    'no side file, no backup left',
  );
  await withDb(s.dataDir, async (db) => {
    assert.equal(await sealedSnapshot(db), snapshot);
    assert.deepEqual(unopenableEverywhere(db, createSealer(oldKey)).length, 1);
  });
});

test('after a rotation the service starts with the new key and reads every sealed value; the old key is kept 0600', async () => {
  const oldKey = await keyOf(main.dataDir);
  const r = await runCli(['rotate-master-key'], main.vars);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`now under a new master key, in ${join(main.dataDir, 'master.key')}`));
  assert.match(r.stdout, /re-sealed 1 TOTP secrets/);
  assert.match(r.stdout, /re-sealed 2 environment variables/);
  assert.match(r.stdout, /recovery codes .* removed.*\n\s+admin/);
  const newKey = await keyOf(main.dataDir);
  assert.notDeepEqual(newKey, oldKey);
  assert.equal((await stat(join(main.dataDir, 'master.key'))).mode & 0o777, 0o600);
  const backups = (await readdir(main.dataDir)).filter((f) => /^master\.key\..+\.old$/.test(f));
  assert.equal(backups.length, 1);
  assert.match(r.stdout, new RegExp(backups[0]!.replace(/\./g, '\\.')));
  assert.equal((await stat(join(main.dataDir, backups[0]!))).mode & 0o777, 0o600);
  assert.deepEqual(
    Buffer.from((await readFile(join(main.dataDir, backups[0]!), 'utf8')).trim(), 'hex'),
    oldKey,
  );
  assert.equal(existsSync(join(main.dataDir, 'master.key.next')), false);

  const to: Sealer = createSealer(newKey);
  await withDb(main.dataDir, async (db) => {
    assert.deepEqual(unopenableEverywhere(db, to), []);
    assert.ok(
      unopenableEverywhere(db, createSealer(oldKey)).length > 0,
      'the old key opens nothing any more',
    );
    const apiKey = await db
      .selectFrom('app_env')
      .select('sealed')
      .where('key', '=', 'API_KEY')
      .executeTakeFirstOrThrow();
    assert.equal(to.open(apiKey.sealed, envBinding(main.appId, 'API_KEY')), 'second-secret');
    assert.equal(await webhookSecret(db, to, main.appId), main.webhook);
    assert.equal(await privateKey(db, to, main.appId), main.deployKey);
    const ch = await db.selectFrom('notification_channels').select('url_sealed').executeTakeFirstOrThrow();
    assert.equal(to.open(ch.url_sealed, channelBinding('ch1')), 'https://hooks.example.test/secret-path');
    const ib = await db.selectFrom('instance_backup').select('secret_sealed').executeTakeFirstOrThrow();
    assert.equal(to.open(ib.secret_sealed!, s3Binding('instance')), 's3-secret-key');
    // Audit states: the masked secret opens with the new key and its fingerprint is the new key's.
    const entries = await db
      .selectFrom('audit')
      .select(['state_before', 'state_after'])
      .where('has_state', '=', 1)
      .execute();
    const masked = entries
      .flatMap((e) => [e.state_before, e.state_after])
      .flatMap((s) => (s ? Object.values(JSON.parse(s)) : []))
      .filter(isMasked);
    assert.ok(masked.length >= 2);
    for (const m of masked) assert.equal(m.fp, to.digest('audit-state', to.open(m.sealed, m.binding)));
    assert.equal((await db.selectFrom('recovery_codes').select('id').execute()).length, 0);
  });

  const svc = await serve(main.vars);
  try {
    const c = new Client(svc.url);
    assert.deepEqual((await c.req('POST', '/api/auth/login', ADMIN)).body, { totp_required: true });
    // The TOTP secret opens: a code from the same authenticator signs in (the next step's: the
    // current one may be the code that enabled it, and a code is accepted once).
    const signedIn = await c.req('POST', '/api/auth/totp', {
      code: await totpCode(main.totpSecret, { epoch: Math.floor(Date.now() / 1000) + 30 }),
    });
    assert.equal(signedIn.status, 200, signedIn.text);
    const env = await c.req('GET', `/api/apps/${main.appId}/env`);
    assert.equal(env.status, 200, env.text);
    assert.equal(env.body.items.find((i: any) => i.key === 'MODE').value, 'prod');
    const diff = await c.req('GET', '/api/audit?limit=50');
    assert.equal(diff.status, 200);
  } finally {
    await svc.stop();
  }
});

test('a crash between the commit and the key file: boot names the side file, a second run finishes', async () => {
  const s = await seeded();
  const oldKey = await keyOf(s.dataDir);
  assert.equal((await runCli(['rotate-master-key'], s.vars)).code, 0);
  // The state such a crash leaves: data under the new key, in master.key.next; the old key in place.
  const newKey = await keyOf(s.dataDir);
  await writeFile(join(s.dataDir, 'master.key.next'), newKey.toString('hex') + '\n', { mode: 0o600 });
  await writeFile(join(s.dataDir, 'master.key'), oldKey.toString('hex') + '\n', { mode: 0o600 });
  const refused = await serveFails(s.vars);
  assert.notEqual(refused.code, 0);
  assert.match(
    refused.stderr + refused.stdout,
    /master\.key\.next does: a master key rotation re-sealed them and stopped before putting the new key in place/,
  );
  const again = await runCli(['rotate-master-key'], s.vars);
  assert.equal(again.code, 0, again.stderr);
  assert.match(again.stdout, /finished an interrupted rotation/);
  assert.deepEqual(await keyOf(s.dataDir), newKey);
  assert.equal(existsSync(join(s.dataDir, 'master.key.next')), false);
  const svc = await serve(s.vars);
  await svc.stop();
});

test('refused while the service answers on its port, and with a key from the shell it cannot rewrite', async () => {
  const s = await seeded();
  const key = await keyOf(s.dataDir);
  const svc = await serve({ ...s.vars, SVC_PORT: '0' });
  try {
    const port = new URL(svc.url).port;
    const r = await runCli(['rotate-master-key'], { ...s.vars, SVC_PORT: port });
    assert.equal(r.code, 1);
    assert.match(r.stderr, /a service answers on port \d+: stop it first.*nothing was changed/);
  } finally {
    await svc.stop();
  }
  const shell = await runCli(['rotate-master-key'], { ...s.vars, SVC_MASTER_KEY: key.toString('hex') });
  assert.equal(shell.code, 1);
  assert.match(shell.stderr, /SVC_MASTER_KEY comes from this shell/);
  assert.deepEqual(await keyOf(s.dataDir), key);
});

test('SVC_MASTER_KEY in the environment file: the file gets the new key, its other lines and mode kept', async () => {
  const s = await seeded();
  const key = await keyOf(s.dataDir);
  const envFile = join(s.dataDir, 'svc.env');
  await writeFile(
    envFile,
    `# svc\nSVC_PROXY=off\nSVC_MASTER_KEY=${key.toString('hex')}\nSVC_PASSWORD_COST=14\n`,
    { mode: 0o600 },
  );
  await rm(join(s.dataDir, 'master.key'));
  const vars = { SVC_DATA_DIR: s.dataDir, SVC_ENV_FILE: envFile };
  const r = await runCli(['rotate-master-key'], vars);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`in ${envFile} \\(SVC_MASTER_KEY\\)`));
  const text = await readFile(envFile, 'utf8');
  const m = /^SVC_MASTER_KEY=([0-9a-f]{64})$/m.exec(text);
  assert.ok(m && m[1] !== key.toString('hex'));
  assert.match(text, /^# svc\nSVC_PROXY=off\n/);
  assert.match(text, /SVC_PASSWORD_COST=14\n$/);
  assert.equal((await stat(envFile)).mode & 0o777, 0o600);
  const svc = await serve(vars);
  await svc.stop();
});
