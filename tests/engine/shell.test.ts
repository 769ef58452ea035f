// The container shell over a real WebSocket client into a real container: off unless enabled,
// step-up, same-origin, 409 on a stopped service, binary frames both ways, resize, audited
// open/close with byte counts, a 1 MB frame closes the socket instead of being buffered.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { WebSocket } from 'ws';
import {
  startTestServer,
  adminClient,
  apiToken,
  ADMIN,
  Client,
  type TestServer,
} from '../_support/server.js';
import { needEngine, BASE_IMAGE } from '../_support/docker.js';
import { removeTagged } from './_helpers.js';
import { poll } from '../_support/wait.js';
import { openShells } from '#lib/shell/session.js';
import { LABEL_APP, LABEL_DEPLOYMENT, LABEL_SERVICE } from '#lib/docker/names.js';
import { ownerLabels } from '#lib/docker/owner.js';
import { insertUser } from '#lib/auth/users-store.js';
import { createApiToken } from '#lib/auth/tokens.js';
import { invalidateCredentials } from '#lib/auth/cache.js';

let s: TestServer | undefined;
let c: Client;
let token: string;
let appId: string;
const tag = `w14-shell-${process.pid}`;

before(async () => {
  s = await startTestServer({ SVC_ENABLE_SHELL: 'true' });
  c = await adminClient(s);
  token = await apiToken(c, 'shell');
});
after(async () => {
  if (!s) return;
  await removeTagged(s.env.engine, tag);
  await s.stop();
});

async function setup(): Promise<void> {
  if (appId) return;
  const r = await c.req('POST', '/api/apps', { name: tag, source: { type: 'image', image: BASE_IMAGE } });
  assert.equal(r.status, 201, r.text);
  appId = r.body.app.id;
  const d = s!.env.engine.docker;
  const labels = (service: string) => ({
    ...ownerLabels(s!.env.engine),
    [LABEL_APP]: tag,
    [LABEL_SERVICE]: service,
    [LABEL_DEPLOYMENT]: 'w14',
    'svc.test': tag,
  });
  const web = await d.createContainer({
    Image: BASE_IMAGE,
    name: `svc-${tag}-web`,
    Cmd: ['sleep', '3600'],
    Labels: labels('web'),
  });
  await web.start();
  await d.createContainer({
    Image: BASE_IMAGE,
    name: `svc-${tag}-db`,
    Cmd: ['sleep', '3600'],
    Labels: labels('db'),
  });
}

const url = (service: string) =>
  `${s!.url.replace('http', 'ws')}/api/apps/${appId}/services/${service}/shell`;

function connect(
  service: string,
  headers: Record<string, string>,
): Promise<{ ws?: WebSocket; status?: number; body?: string }> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url(service), { headers });
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (b: Buffer) => (body += b.toString()));
      res.on('end', () => resolve({ status: res.statusCode, body }));
    });
    ws.once('error', (e) => reject(e));
  });
}

test('refusals: disabled 404, no step-up 403, foreign origin 401, stopped service 409', async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  const bearer = { authorization: `Bearer ${token}` };
  s!.env.config.enableShell = false;
  assert.equal((await connect('web', bearer)).status, 404);
  s!.env.config.enableShell = true;
  // The token has no step-up of its own yet (the session's does not count for it).
  const noStep = await connect('web', bearer);
  assert.equal(noStep.status, 403);
  assert.match(noStep.body!, /step_up_required/);
  const up = new Client(s!.url);
  up.bearer = token;
  assert.equal((await up.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  await c.req('POST', '/api/auth/step-up', { password: ADMIN.password });
  assert.equal(
    (await connect('web', { cookie: c.cookieHeader(), origin: 'https://evil.example' })).status,
    401,
  );
  const stopped = await connect('db', bearer);
  assert.equal(stopped.status, 409);
  assert.match(stopped.body!, /not running/);
  assert.equal((await connect('nope', bearer)).status, 404);
});

test('a real shell: command output, resize, audited with byte counts', async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  const { ws } = await connect('web', { authorization: `Bearer ${token}` });
  assert.ok(ws);
  let out = '';
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    assert.equal(isBinary, true, 'the TTY arrives in binary frames');
    out += data.toString('utf8');
  });
  ws.send(JSON.stringify({ type: 'resize', rows: 33, cols: 101 }));
  ws.send(Buffer.from('echo hello-$((6*7)); stty size\n'), { binary: true });
  await poll('command output', () => out.includes('hello-42') && /33 101/.test(out), 30_000, 50);
  const closed = new Promise<void>((r) => ws.once('close', () => r()));
  ws.close();
  await closed;
  const entries = await poll(
    'audit of the close',
    async () => {
      const rows = await s!.env.db
        .selectFrom('audit')
        .select(['action', 'detail', 'target'])
        .where('action', 'like', 'app.shell_%')
        .execute();
      return rows.some((r) => r.action === 'app.shell_closed') ? rows : null;
    },
    15_000,
    50,
  );
  assert.ok(entries.some((e) => e.action === 'app.shell_opened' && e.target === appId));
  const closedEntry = JSON.parse(entries.find((e) => e.action === 'app.shell_closed')!.detail!);
  assert.ok(closedEntry.bytes_in >= 'echo hello-$((6*7)); stty size\n'.length, JSON.stringify(closedEntry));
  assert.ok(closedEntry.bytes_out > 0);
});

test("a container made outside the control plane with an app's labels is not the app's: not listed, no shell", async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  // Another app of this database whose only "web" container was made directly on the engine, with
  // every label the control plane puts on its own except this instance's id.
  const r = await c.req('POST', '/api/apps', {
    name: `${tag}-x`,
    source: { type: 'image', image: BASE_IMAGE },
  });
  assert.equal(r.status, 201, r.text);
  const d = s!.env.engine.docker;
  const labels = {
    'svc.managed': 'true',
    [LABEL_APP]: `${tag}-x`,
    [LABEL_SERVICE]: 'web',
    [LABEL_DEPLOYMENT]: 'w14',
    'svc.test': tag,
  };
  const imposter = await d.createContainer({
    Image: BASE_IMAGE,
    name: `svc-${tag}-x-web`,
    Cmd: ['sleep', '3600'],
    Labels: labels,
  });
  await imposter.start();
  const services = await c.req('GET', `/api/apps/${r.body.app.id}/services`);
  assert.equal(services.status, 200, services.text);
  assert.deepEqual(services.body.items, [], services.text);
  const up = new Client(s!.url);
  up.bearer = token;
  assert.equal((await up.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const shell = await new Promise<{ ws?: WebSocket; status?: number }>((resolve, reject) => {
    const ws = new WebSocket(`${s!.url.replace('http', 'ws')}/api/apps/${r.body.app.id}/services/web/shell`, {
      headers: { authorization: `Bearer ${token}` },
    });
    ws.once('open', () => resolve({ ws }));
    ws.once('unexpected-response', (_req, res) => resolve({ status: res.statusCode }));
    ws.once('error', reject);
  });
  shell.ws?.close();
  assert.equal(shell.status, 404, 'the shell does not open a container the control plane did not make');
  // The app's own service still opens: the refusal is about the container, not the route.
  const own = await connect('web', { authorization: `Bearer ${token}` });
  assert.ok(own.ws, String(own.status));
  own.ws.close();
});

test('a 1 MB frame closes the socket (1009) instead of being buffered', async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  const { ws } = await connect('web', { authorization: `Bearer ${token}` });
  assert.ok(ws);
  const code = new Promise<number>((r) => ws.once('close', (c2: number) => r(c2)));
  ws.on('error', () => {});
  ws.send(Buffer.alloc(1024 * 1024, 0x61), { binary: true });
  assert.equal(await code, 1009);
  // The server is still fine and the slot was released.
  const again = await connect('web', { authorization: `Bearer ${token}` });
  assert.ok(again.ws);
  again.ws.close();
});

test('at most 4 shells per operator', async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  const bearer = { authorization: `Bearer ${token}` };
  const me = (await c.req('GET', '/api/auth/me')).body.user.id;
  await poll('earlier shells released', () => openShells(me) === 0, 15_000, 50);
  const open: WebSocket[] = [];
  for (let i = 0; i < 4; i++) {
    const r = await connect('web', bearer);
    assert.ok(r.ws, `shell ${i + 1} opens`);
    open.push(r.ws);
  }
  const fifth = await connect('web', bearer);
  assert.equal(fifth.status, 409);
  assert.match(fifth.body!, /At most 4/);
  await Promise.all(
    open.map(
      (ws) =>
        new Promise<void>((r) => {
          ws.once('close', () => r());
          ws.close();
        }),
    ),
  );
  const again = await poll(
    'a slot after closing',
    async () => (await connect('web', bearer)).ws ?? null,
    15_000,
    100,
  );
  again.close();
});

test('a shell with no byte either way for SVC_SHELL_IDLE seconds is closed, and the close is audited', async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  // Its own control plane with a 2 s idle limit (the shared one keeps the 15-minute default).
  const quick = await startTestServer({ SVC_ENABLE_SHELL: 'true', SVC_SHELL_IDLE: '2' });
  try {
    const qc = await adminClient(quick);
    const qtoken = await apiToken(qc, 'idle');
    const bearer = new Client(quick.url, { authorization: `Bearer ${qtoken}` });
    assert.equal((await bearer.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
    const r = await qc.req('POST', '/api/apps', {
      name: `${tag}-q`,
      source: { type: 'image', image: BASE_IMAGE },
    });
    assert.equal(r.status, 201, r.text);
    const d = quick.env.engine.docker;
    const labels = {
      ...ownerLabels(quick.env.engine),
      [LABEL_APP]: `${tag}-q`,
      [LABEL_SERVICE]: 'web',
      [LABEL_DEPLOYMENT]: 'w14',
      'svc.test': tag,
    };
    const web = await d.createContainer({
      Image: BASE_IMAGE,
      name: `svc-${tag}-q-web`,
      Cmd: ['sleep', '3600'],
      Labels: labels,
    });
    await web.start();
    const ws = new WebSocket(
      `${quick.url.replace('http', 'ws')}/api/apps/${r.body.app.id}/services/web/shell`,
      { headers: { authorization: `Bearer ${qtoken}` } },
    );
    let out = '';
    ws.on('message', (data: Buffer) => (out += data.toString('utf8')));
    const closed = new Promise<{ code: number; reason: string }>((res) =>
      ws.once('close', (code, reason) => res({ code, reason: reason.toString() })),
    );
    await new Promise<void>((res, rej) => {
      ws.once('open', () => res());
      ws.once('error', rej);
    });
    ws.send(Buffer.from('echo alive-$((2*21))\n'), { binary: true });
    await poll('command output', () => out.includes('alive-42'), 30_000, 50);
    const { code, reason } = await closed;
    assert.equal(code, 1000);
    assert.equal(reason, 'idle for 2 seconds');
    const row = await poll(
      'audit of the idle close',
      async () =>
        (await quick.env.db
          .selectFrom('audit')
          .select(['detail'])
          .where('action', '=', 'app.shell_closed')
          .executeTakeFirst()) ?? null,
      15_000,
      50,
    );
    assert.equal(JSON.parse(row.detail!).reason, 'idle for 2 seconds');
  } finally {
    await quick.stop();
  }
});

/** The close of a socket (code and reason); a shell that stays open fails the test after a generous bound. */
function closeOf(ws: WebSocket, what: string): Promise<{ code: number; reason: string }> {
  return new Promise((resolve, reject) => {
    const bound = setTimeout(() => reject(new Error(`${what}: the shell was still open after 20 s`)), 20_000);
    ws.once('close', (code: number, reason: Buffer) => {
      clearTimeout(bound);
      resolve({ code, reason: reason.toString() });
    });
  });
}

/** A shell that runs: a command's output came back, so the exec is attached. */
async function liveShell(headers: Record<string, string>): Promise<WebSocket> {
  const { ws, status, body } = await connect('web', headers);
  assert.ok(ws, `shell refused: ${status} ${body}`);
  let out = '';
  ws.on('message', (data: Buffer) => (out += data.toString('utf8')));
  ws.send(Buffer.from('echo up-$((3*7))\n'), { binary: true });
  await poll('command output', () => out.includes('up-21'), 30_000, 50);
  return ws;
}

async function closeReasons(db: TestServer['env']['db']): Promise<string[]> {
  const rows = await db
    .selectFrom('audit')
    .select('detail')
    .where('action', '=', 'app.shell_closed')
    .execute();
  return rows.map((r) => JSON.parse(r.detail!).reason as string);
}

test('revoking the token closes its shell (1008 credentials revoked), and the close is audited with that reason', async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const created = await c.req('POST', '/api/auth/api-tokens', { name: 'shell-revoked' });
  assert.equal(created.status, 201, created.text);
  const bot = new Client(s!.url);
  bot.bearer = created.body.token;
  assert.equal((await bot.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const ws = await liveShell({ authorization: `Bearer ${created.body.token}` });
  const closed = closeOf(ws, 'token revoked');
  const before = (await closeReasons(s!.env.db)).length;
  assert.equal((await c.req('DELETE', `/api/auth/api-tokens/${created.body.id}`)).status, 204);
  assert.deepEqual(await closed, { code: 1008, reason: 'credentials revoked' });
  const reasons = await poll(
    'audit of the close',
    async () => {
      const all = await closeReasons(s!.env.db);
      return all.length > before ? all : null;
    },
    15_000,
    50,
  );
  assert.equal(reasons.at(-1), 'credentials revoked');
});

test("narrowing a deployer's apps closes their open shell at once (1008 access withdrawn)", async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const user = await insertUser(s!.env.db, `narrowed-${process.pid}`, 'scrypt$10$8$1$x$y', {
    role: 'deployer',
    appIds: [appId],
  });
  const made = await createApiToken(s!.env.db, user.id, 'narrowed-shell', null);
  await s!.env.db
    .updateTable('api_tokens')
    .set({ step_up_until: new Date(Date.now() + 120_000).toISOString() })
    .where('id', '=', made.id)
    .execute();
  invalidateCredentials();
  const ws = await liveShell({ authorization: `Bearer ${made.token}` });
  const closed = closeOf(ws, 'access narrowed');
  const narrowed = await c.req('PATCH', `/api/operators/${user.id}`, { app_ids: [] });
  assert.equal(narrowed.status, 200, narrowed.text);
  assert.deepEqual(await closed, { code: 1008, reason: 'access withdrawn' });
  // And a new one is refused as for an app that does not exist.
  const again = await connect('web', { authorization: `Bearer ${made.token}` });
  assert.equal(again.status, 404, again.body);
});

test("logging out, or deleting the session from another one, closes that session's shell", async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  const cookieShell = async () => {
    const u = new Client(s!.url);
    assert.equal((await u.req('POST', '/api/auth/login', ADMIN)).status, 200);
    assert.equal((await u.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
    return { u, ws: await liveShell({ cookie: u.cookieHeader(), origin: s!.url }) };
  };
  const a = await cookieShell();
  const loggedOut = closeOf(a.ws, 'logout');
  assert.equal((await a.u.req('POST', '/api/auth/logout')).status, 204);
  assert.deepEqual(await loggedOut, { code: 1008, reason: 'credentials revoked' });

  const b = await cookieShell();
  const sid = (await b.u.req('GET', '/api/auth/sessions')).body.items.find(
    (x: { current: boolean }) => x.current,
  ).id;
  const deleted = closeOf(b.ws, 'session deleted');
  assert.equal((await c.req('DELETE', `/api/auth/sessions/${sid}`)).status, 204);
  assert.deepEqual(await deleted, { code: 1008, reason: 'credentials revoked' });
  // The caller's own shells are untouched by another credential's revocation.
  const ws = await liveShell({ authorization: `Bearer ${token}` });
  const own = closeOf(ws, 'client close');
  ws.close();
  assert.equal((await own).code, 1005);
});

test('a busy shell still closes after SVC_SHELL_MAX seconds, with its reason, audited', async (t) => {
  if (!(await needEngine(t))) return;
  await setup();
  // Its own control plane with a 2 s maximum (the shared one keeps the 8-hour default); idle stays at 15 minutes.
  const quick = await startTestServer({ SVC_ENABLE_SHELL: 'true', SVC_SHELL_MAX: '2' });
  try {
    const qc = await adminClient(quick);
    const qtoken = await apiToken(qc, 'max');
    const bot = new Client(quick.url, { authorization: `Bearer ${qtoken}` });
    assert.equal((await bot.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
    const r = await qc.req('POST', '/api/apps', {
      name: `${tag}-m`,
      source: { type: 'image', image: BASE_IMAGE },
    });
    assert.equal(r.status, 201, r.text);
    const labels = {
      ...ownerLabels(quick.env.engine),
      [LABEL_APP]: `${tag}-m`,
      [LABEL_SERVICE]: 'web',
      [LABEL_DEPLOYMENT]: 'w14',
      'svc.test': tag,
    };
    const d = quick.env.engine.docker;
    const web = await d.createContainer({
      Image: BASE_IMAGE,
      name: `svc-${tag}-m-web`,
      Cmd: ['sleep', '3600'],
      Labels: labels,
    });
    await web.start();
    const shellUrl = `${quick.url.replace('http', 'ws')}/api/apps/${r.body.app.id}/services/web/shell`;
    const ws = new WebSocket(shellUrl, { headers: { authorization: `Bearer ${qtoken}` } });
    let out = '';
    ws.on('message', (data: Buffer) => (out += data.toString('utf8')));
    const closed = closeOf(ws, 'SVC_SHELL_MAX');
    await new Promise<void>((res, rej) => {
      ws.once('open', () => res());
      ws.once('error', rej);
    });
    // Output every second: never idle.
    ws.send(Buffer.from('while true; do echo tick; sleep 1; done\n'), { binary: true });
    await poll('the loop running', () => out.includes('tick'), 30_000, 50);
    const reason = 'open for 2 seconds, the longest a shell may stay open';
    assert.deepEqual(await closed, { code: 1000, reason });
    const reasons = await poll(
      'audit of the close',
      async () => {
        const all = await closeReasons(quick.env.db);
        return all.length ? all : null;
      },
      15_000,
      50,
    );
    assert.deepEqual(reasons, [reason]);
  } finally {
    await quick.stop();
  }
});

test('a plain GET of the shell route answers as before, step-up or not: 400 without the upgrade, 404 when disabled', async () => {
  const u = new Client(s!.url);
  assert.equal((await u.req('POST', '/api/auth/login', ADMIN)).status, 200);
  const path = `/api/apps/${'0'.repeat(26)}/services/web/shell`;
  const plain = await u.req('GET', path);
  assert.equal(plain.status, 400, plain.text);
  assert.equal(plain.body.code, 'bad_request');
  s!.env.config.enableShell = false;
  try {
    assert.equal((await u.req('GET', path)).status, 404);
  } finally {
    s!.env.config.enableShell = true;
  }
  assert.equal((await u.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  assert.equal((await u.req('GET', path)).status, 400);
});
