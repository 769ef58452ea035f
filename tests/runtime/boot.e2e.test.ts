// The process as an operator starts it (`svc serve`, the README's `npm start`): first log line,
// a master key generated beside the data on first boot and guarded on later ones, private file
// modes, the signing key sealed and recovery codes keyed, older data upgraded in place.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, readdir, rm, lstat, writeFile } from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import BetterSqlite3 from 'better-sqlite3';
import { serve, serveFails, type Served } from '../_support/cli.js';
import { Client, ADMIN, reveal } from '../_support/server.js';
import { totpCode } from '#lib/auth/totp.js';
import { poll } from '../_support/wait.js';
import { createSealer } from '#lib/crypto/seal.js';

const dirs: string[] = [];
const running: Served[] = [];
after(async () => {
  for (const s of running) await s.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

async function tempDir(): Promise<string> {
  const d = await mkdtemp(join(tmpdir(), 'svc-boot-'));
  dirs.push(d);
  return d;
}

async function start(vars: Record<string, string>): Promise<Served> {
  const s = await serve({
    SVC_PASSWORD_COST: '12',
    SVC_AUTH_RATE_LIMIT: '1000',
    SVC_SECURITY_MONITOR: 'false',
    ...vars,
  });
  running.push(s);
  return s;
}

async function stop(s: Served): Promise<void> {
  assert.equal(await s.stop(), 0);
  running.splice(running.indexOf(s), 1);
}

/** Every file and directory under `dir`, with its permission bits. */
async function modes(dir: string, prefix = ''): Promise<Array<[string, number, 'file' | 'dir']>> {
  const out: Array<[string, number, 'file' | 'dir']> = [];
  for (const name of await readdir(dir)) {
    const st = await lstat(join(dir, name));
    const rel = prefix + name;
    if (st.isDirectory())
      out.push([rel + '/', st.mode & 0o777, 'dir'], ...(await modes(join(dir, name), rel + '/')));
    else if (st.isFile()) out.push([rel, st.mode & 0o777, 'file']);
  }
  return out;
}

function readDb<T>(dataDir: string, fn: (db: BetterSqlite3.Database) => T): T {
  const db = new BetterSqlite3(join(dataDir, 'svc.db'), { readonly: true, fileMustExist: true });
  try {
    return fn(db);
  } finally {
    db.close();
  }
}

async function setupAndLogin(url: string, dataDir: string): Promise<Client> {
  const c = new Client(url);
  const token = (await readFile(join(dataDir, 'setup.token'), 'utf8')).trim();
  assert.equal((await c.req('POST', '/api/setup/admin', { token, ...ADMIN })).status, 201);
  assert.equal((await c.req('POST', '/api/auth/login', ADMIN)).status, 200);
  return c;
}

async function enableTotp(c: Client): Promise<{ secret: string; codes: string[] }> {
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const setup = await c.req('POST', '/api/auth/totp/setup');
  assert.equal(setup.status, 200, setup.text);
  const on = await c.req('POST', '/api/auth/totp/enable', { code: await totpCode(setup.body.secret) });
  assert.equal(on.status, 200, on.text);
  return { secret: setup.body.secret, codes: on.body.recovery_codes };
}

test('first boot: "listening" with the start time is the first log line; a master key is generated beside the data, 0600, and announced', async () => {
  const dataDir = join(await tempDir(), 'data');
  const s = await start({ SVC_DATA_DIR: dataDir });
  const first = s.lines[0]!;
  assert.match(first.msg, /^listening on http:\/\/127\.0\.0\.1:\d+ \(started in \d+ ms\)$/);
  assert.equal(typeof first.startup_ms, 'number');
  assert.ok(first.startup_ms > 0);
  assert.equal(first.url, s.url);
  const keyFile = join(dataDir, 'master.key');
  const announced = await poll(
    'the master key notice',
    () => s.lines.find((l) => l.master_key_file === keyFile),
    10_000,
    20,
  );
  assert.match(announced.msg, /generated the master key in .*master\.key: back it up/);
  assert.equal(
    s.lines.filter((l) => JSON.stringify(l).includes(readFileSync(keyFile, 'utf8').trim())).length,
    0,
    'the key itself is never logged',
  );
  assert.match(readFileSync(keyFile, 'utf8'), /^[0-9a-f]{64}\n$/);

  // Secrets can be sealed straight away: no 503 for lack of a key.
  const c = await setupAndLogin(s.url, dataDir);
  const app = await c.req('POST', '/api/apps', {
    name: 'sealed-at-once',
    source: { type: 'image', image: 'nginx:1.27' },
  });
  assert.equal(app.status, 201, app.text);
  assert.equal(
    (await c.req('PUT', `/api/apps/${app.body.app.id}/env`, { items: [{ key: 'TOKEN', value: 'hunter2' }] }))
      .status,
    200,
  );
  const posture = await c.req('GET', '/api/security/posture');
  const row = posture.body.items.find((i: { code: string }) => i.code === 'master_key');
  assert.equal(row.status, 'warning');
  assert.match(row.reason, /beside the data/);
  assert.match(row.fix, /SVC_MASTER_KEY/);
  assert.match(row.fix, /delete .*master\.key/);
  await stop(s);

  // A second boot uses the file and generates nothing.
  const again = await start({ SVC_DATA_DIR: dataDir });
  const c2 = new Client(again.url);
  assert.equal((await c2.req('POST', '/api/auth/login', ADMIN)).status, 200);
  const env = await reveal(c2, app.body.app.id, 'TOKEN');
  assert.equal(env.body.value, 'hunter2');
  // Boot notices are written right after "listening": long read by now.
  assert.equal(
    again.lines.some((l) => l.master_key_file && /generated/.test(l.msg)),
    false,
  );
  await stop(again);
});

test('the data directory is 0700 and every file in it 0600 (database, -wal, -shm, setup token, key), after real use', async () => {
  const dataDir = join(await tempDir(), 'data');
  const s = await start({ SVC_DATA_DIR: dataDir });
  const before = await modes(dataDir);
  for (const name of ['svc.db', 'svc.db-wal', 'svc.db-shm', 'setup.token', 'master.key']) {
    assert.ok(
      before.some(([n]) => n === name),
      `${name} exists: ${JSON.stringify(before)}`,
    );
  }
  const c = await setupAndLogin(s.url, dataDir);
  await enableTotp(c);
  const st = await lstat(dataDir);
  assert.equal(st.mode & 0o777, 0o700);
  const all = await modes(dataDir);
  for (const [name, mode, kind] of all)
    assert.equal(mode, kind === 'dir' ? 0o700 : 0o600, `${name} is ${mode.toString(8)}`);
  await stop(s);
});

test('modes loosened by an older build or a copy are tightened at boot', async () => {
  const dataDir = join(await tempDir(), 'data');
  const s = await start({ SVC_DATA_DIR: dataDir });
  await stop(s);
  const { chmod } = await import('node:fs/promises');
  await chmod(dataDir, 0o755);
  for (const f of ['svc.db', 'master.key', 'setup.token']) await chmod(join(dataDir, f), 0o644);
  const again = await start({ SVC_DATA_DIR: dataDir });
  assert.equal((await lstat(dataDir)).mode & 0o777, 0o700);
  for (const [name, mode, kind] of await modes(dataDir))
    assert.equal(mode, kind === 'dir' ? 0o700 : 0o600, name);
  await stop(again);
});

test('the signing key is sealed under the master key and recovery codes are keyed by it, not a bare SHA-256', async () => {
  const dataDir = join(await tempDir(), 'data');
  const s = await start({ SVC_DATA_DIR: dataDir });
  const c = await setupAndLogin(s.url, dataDir);
  const { codes } = await enableTotp(c);
  const { signing, hashes } = readDb(dataDir, (db) => ({
    signing: (db.prepare("select value from settings where key = 'signing_key'").get() as { value: string })
      .value,
    hashes: (db.prepare('select code_hash from recovery_codes').all() as Array<{ code_hash: string }>).map(
      (r) => r.code_hash,
    ),
  }));
  assert.match(signing, /^v1\./);
  const key = Buffer.from(readFileSync(join(dataDir, 'master.key'), 'utf8').trim(), 'hex');
  assert.equal(Buffer.from(createSealer(key).open(signing, 'settings:signing_key'), 'base64url').length, 32);
  assert.equal(hashes.length, 10);
  const bare = new Set(
    codes.map((code) =>
      createHash('sha256')
        .update('recovery:' + code.replace('-', ''))
        .digest('hex'),
    ),
  );
  for (const h of hashes) {
    assert.match(h, /^hmac1:[0-9a-f]{64}$/);
    assert.equal(bare.has(h) || bare.has(h.slice(6)), false, 'a bare SHA-256 of a code is stored');
  }
  await stop(s);
});

test('data written by an older build (signing key and recovery codes in clear) is upgraded at boot and keeps working', async () => {
  const dataDir = join(await tempDir(), 'data');
  const s = await start({ SVC_DATA_DIR: dataDir });
  const c = await setupAndLogin(s.url, dataDir);
  const { codes } = await enableTotp(c);
  await stop(s);
  // What the previous build stored: the signing key in clear, codes as SHA-256('recovery:' + code).
  const key = Buffer.from(readFileSync(join(dataDir, 'master.key'), 'utf8').trim(), 'hex');
  const db = new BetterSqlite3(join(dataDir, 'svc.db'));
  const sealed = (
    db.prepare("select value from settings where key = 'signing_key'").get() as { value: string }
  ).value;
  const clear = createSealer(key).open(sealed, 'settings:signing_key');
  db.prepare("update settings set value = ? where key = 'signing_key'").run(clear);
  db.prepare('delete from recovery_codes').run();
  const userId = (db.prepare('select id from users').get() as { id: string }).id;
  for (const code of codes) {
    db.prepare('insert into recovery_codes (user_id, code_hash, used_at) values (?, ?, null)').run(
      userId,
      createHash('sha256')
        .update('recovery:' + code.replace('-', ''))
        .digest('hex'),
    );
  }
  db.close();

  const again = await start({ SVC_DATA_DIR: dataDir });
  await poll(
    'the re-key notice',
    () => again.lines.some((l) => l.recovery_codes === 10 && /re-keyed/.test(l.msg)),
    10_000,
    20,
  );
  const after = readDb(dataDir, (d) => ({
    signing: (d.prepare("select value from settings where key = 'signing_key'").get() as { value: string })
      .value,
    hashes: (d.prepare('select code_hash from recovery_codes').all() as Array<{ code_hash: string }>).map(
      (r) => r.code_hash,
    ),
  }));
  assert.match(after.signing, /^v1\./);
  assert.equal(
    createSealer(key).open(after.signing, 'settings:signing_key'),
    clear,
    'the same key, now sealed',
  );
  for (const h of after.hashes) assert.match(h, /^hmac1:/);
  // The session made before the upgrade still passes CSRF (same signing key)...
  const old = new Client(again.url);
  old.cookies = new Map(c.cookies);
  assert.equal((await old.req('POST', '/api/auth/step-up', { code: codes[0] })).status, 200);
  // ...and an old recovery code still completes a login.
  const l = new Client(again.url);
  assert.deepEqual((await l.req('POST', '/api/auth/login', ADMIN)).body, { totp_required: true });
  assert.equal((await l.req('POST', '/api/auth/totp', { code: codes[1] })).status, 200);
  assert.equal((await l.req('POST', '/api/auth/totp', { code: codes[1] })).status, 401);
  await stop(again);
});

test('an explicit SVC_MASTER_KEY wins; one that cannot open the sealed data stops the boot with a clear message, and so does a missing key', async () => {
  const dataDir = join(await tempDir(), 'data');
  const s = await start({ SVC_DATA_DIR: dataDir });
  await setupAndLogin(s.url, dataDir);
  await stop(s);
  const fileKey = readFileSync(join(dataDir, 'master.key'), 'utf8').trim();

  const wrong = await serveFails({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: 'c'.repeat(64) });
  assert.equal(wrong.code, 1);
  assert.match(wrong.stderr, /SVC_MASTER_KEY cannot open the secrets already sealed/);
  assert.match(wrong.stderr, /master\.key does; unset SVC_MASTER_KEY or set it to that key/);
  assert.equal(wrong.stderr.includes(fileKey), false);

  // Moving the key out: the same key from the environment boots; the leftover file is flagged.
  const moved = await start({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: fileKey });
  const c = new Client(moved.url);
  assert.equal((await c.req('POST', '/api/auth/login', ADMIN)).status, 200);
  const row = (await c.req('GET', '/api/security/posture')).body.items.find(
    (i: { code: string }) => i.code === 'master_key',
  );
  assert.equal(row.status, 'warning');
  assert.match(row.reason, /still stored beside the data/);
  await stop(moved);

  await rm(join(dataDir, 'master.key'));
  const outside = await start({ SVC_DATA_DIR: dataDir, SVC_MASTER_KEY: fileKey });
  const c2 = new Client(outside.url);
  assert.equal((await c2.req('POST', '/api/auth/login', ADMIN)).status, 200);
  assert.equal(
    (await c2.req('GET', '/api/security/posture')).body.items.find(
      (i: { code: string }) => i.code === 'master_key',
    ).status,
    'ok',
  );
  await stop(outside);

  // The key neither in the environment nor in the file: no new key is invented over sealed data.
  const missing = await serveFails({ SVC_DATA_DIR: dataDir });
  assert.equal(missing.code, 1);
  assert.match(missing.stderr, /holds secrets sealed with a master key, but SVC_MASTER_KEY is not set/);
  await assert.rejects(readFile(join(dataDir, 'master.key')));
  await writeFile(join(dataDir, 'master.key'), 'not a key\n');
  const garbage = await serveFails({ SVC_DATA_DIR: dataDir });
  assert.match(garbage.stderr, /master\.key must hold 64 hexadecimal characters/);
});
