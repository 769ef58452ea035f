// People and permissions on a WebSocket, over the real server: another app's topics and shell for
// a deployer limited to one app, an open socket losing what a demoted operator's role or list lost
// (a build: topic too), a disabled operator's upgrade refused. The same people over plain HTTP,
// and the permission matrix, are in-process: tests/api/permissions.test.ts.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { request } from 'node:http';
import { randomBytes } from 'node:crypto';
import { startTestServer, adminClient, ADMIN, Client, type TestServer } from '../_support/server.js';
import { openSocket, wsUrl, insertFinishedDeployment } from '../_support/ws.js';
import { people, twoApps, FAKE_ID as FAKE, type People } from '../_support/people.js';

let s: TestServer;
let owner: Client;
let appA: string;
let appB: string;
let team: People;

/** The HTTP answer to a WebSocket upgrade (status and error body), or 101 when it is accepted. */
function upgrade(path: string, authorization: string): Promise<{ status: number; body: any }> {
  return new Promise((resolve, reject) => {
    const key = randomBytes(16).toString('base64');
    const headers = {
      authorization,
      connection: 'Upgrade',
      upgrade: 'websocket',
      'sec-websocket-version': '13',
      'sec-websocket-key': key,
    };
    const req = request(s.url + path, { headers });
    req.on('response', (res) => {
      let text = '';
      res.on('data', (c) => (text += c));
      res.on('end', () => resolve({ status: res.statusCode!, body: text ? JSON.parse(text) : null }));
    });
    req.on('upgrade', (_res, socket) => {
      socket.destroy();
      resolve({ status: 101, body: null });
    });
    req.on('error', reject);
    req.end();
  });
}

before(async () => {
  s = await startTestServer({ SVC_ENABLE_SHELL: 'true' });
  owner = await adminClient(s);
  team = people(s);
  [appA, appB] = await twoApps(owner);
});

after(async () => {
  await s?.stop();
});

test('a deployer limited to app A: app B is absent on WebSocket topics and in the shell', async () => {
  const d = await team.operator('only-a', 'deployer', [appA]);
  const ws = await openSocket(wsUrl(s.url), { authorization: `Bearer ${d.token}` });
  const frames: any[] = [];
  ws.on('message', (m) => frames.push(JSON.parse(String(m))));
  const answer = async (topic: string) => {
    ws.send(JSON.stringify({ type: 'subscribe', topic }));
    while (!frames.some((f) => f.topic === topic)) await new Promise((r) => setTimeout(r, 10));
    return frames.find((f) => f.topic === topic);
  };
  const ghost = await answer(`logs:${FAKE}`);
  const logsB = await answer(`logs:${appB}`);
  assert.equal(logsB.code, 'not_found');
  assert.equal(
    logsB.error.replaceAll(appB, 'X'),
    ghost.error.replaceAll(FAKE, 'X'),
    'indistinguishable from a missing app',
  );
  assert.equal((await answer(`stats:${appB}`)).code, 'not_found');
  await insertFinishedDeployment(s.env.db, appB, 'depb1');
  assert.equal((await answer('build:depb1')).code, 'not_found');
  assert.equal((await answer(`logs:${appA}`)).type, 'subscribed');
  // A fleet topic carries only app A's events.
  assert.equal((await answer('deployments')).type, 'subscribed');
  s.env.bus.publish('deployments', { type: 'status', app_id: appB, id: 'x' });
  s.env.bus.publish('deployments', { type: 'status', app_id: appA, id: 'y' });
  while (!frames.some((f) => f.type === 'event' && f.topic === 'deployments'))
    await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(
    frames.filter((f) => f.type === 'event' && f.topic === 'deployments').map((f) => f.data.app_id),
    [appA],
  );
  ws.close();

  // The shell: with a fresh step-up, app B still answers 404 before anything is looked up.
  await team.stepUp(d.id);
  const shellB = await upgrade(`/api/apps/${appB}/services/web/shell`, `Bearer ${d.token}`);
  const shellGhost = await upgrade(`/api/apps/${FAKE}/services/web/shell`, `Bearer ${d.token}`);
  assert.deepEqual(shellB, { status: 404, body: { error: 'No such app', code: 'not_found' } });
  assert.deepEqual(shellB, shellGhost, 'as absent as an app that does not exist');
  const shellA = await upgrade(`/api/apps/${appA}/services/web/shell`, `Bearer ${d.token}`);
  assert.notEqual(shellA.body?.error, 'No such app', 'app A goes on to the service lookup');
  assert.notEqual(shellA.status, 403);
  const viewer = await team.operator('shell-viewer', 'viewer', null, { stepUp: true });
  const shellV = await upgrade(`/api/apps/${appA}/services/web/shell`, `Bearer ${viewer.token}`);
  assert.equal(shellV.body.code, 'forbidden');
  assert.equal(shellV.status, 403, 'a viewer never opens a shell');
});

test('a demoted operator: their token and their open socket lose what the role or list lost, at once', async () => {
  const d = await team.operator('demoted', 'deployer');
  const t = team.bearer(d.token);
  assert.ok((await t.req('GET', '/api/auth/me')).body.permissions.includes('app.deploy'));
  const ws = await openSocket(wsUrl(s.url), { authorization: `Bearer ${d.token}` });
  const frames: any[] = [];
  ws.on('message', (m) => frames.push(JSON.parse(String(m))));
  const closed = new Promise<number>((r) => ws.once('close', (code) => r(code)));
  for (const topic of [`logs:${appA}`, `logs:${appB}`]) ws.send(JSON.stringify({ type: 'subscribe', topic }));
  while (frames.filter((f) => f.type === 'subscribed').length < 2)
    await new Promise((r) => setTimeout(r, 10));

  // Role: deployer -> viewer. The row and invalidateCredentials() are all it takes.
  await team.setRow(d.id, { role: 'viewer' });
  const me = (await t.req('GET', '/api/auth/me')).body;
  assert.equal(me.user.role, 'viewer');
  assert.ok(!me.permissions.includes('app.deploy'));
  const deploy = await t.req('POST', `/api/apps/${appA}/deployments`, {});
  assert.equal(deploy.status, 403);
  assert.equal(deploy.body.code, 'forbidden');
  assert.equal((await t.req('GET', `/api/apps/${appA}`)).status, 200, 'reading stays');

  // List: every app -> only B. The socket's subscription to A is withdrawn; B's stays.
  await team.setRow(d.id, { app_ids: JSON.stringify([appB]) });
  while (!frames.some((f) => f.type === 'error' && f.topic === `logs:${appA}`))
    await new Promise((r) => setTimeout(r, 10));
  assert.equal(frames.find((f) => f.type === 'error' && f.topic === `logs:${appA}`).code, 'forbidden');
  assert.ok(!frames.some((f) => f.type === 'error' && f.topic === `logs:${appB}`));
  assert.equal((await t.req('GET', `/api/apps/${appA}`)).status, 404);
  s.env.bus.publish(`logs:${appA}`, { line: 'not for them' });
  s.env.bus.publish(`logs:${appB}`, { line: 'for them' });
  while (!frames.some((f) => f.type === 'event')) await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(
    frames.filter((f) => f.type === 'event').map((f) => f.topic),
    [`logs:${appB}`],
  );

  // Disabled: the socket closes.
  await team.setRow(d.id, { disabled: 1 });
  assert.equal(await closed, 1008);
});

test('a narrowed socket: its build: subscription of a withdrawn app ends and sends nothing more', async () => {
  const d = await team.operator('narrowed', 'deployer');
  assert.equal((await owner.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  await insertFinishedDeployment(s.env.db, appA, 'revdep1');
  const ws = await openSocket(wsUrl(s.url), { authorization: `Bearer ${d.token}` });
  const frames: any[] = [];
  ws.on('message', (m) => frames.push(JSON.parse(String(m))));
  for (const topic of ['build:revdep1', `logs:${appB}`])
    ws.send(JSON.stringify({ type: 'subscribe', topic }));
  while (frames.filter((f) => f.type === 'subscribed').length < 2)
    await new Promise((r) => setTimeout(r, 10));
  assert.equal((await owner.req('PATCH', `/api/operators/${d.id}`, { app_ids: [appB] })).status, 200);
  while (!frames.some((f) => f.type === 'error' && f.topic === 'build:revdep1'))
    await new Promise((r) => setTimeout(r, 10));
  s.env.bus.publish('build:revdep1', { line: 'not for them' });
  s.env.bus.publish(`logs:${appB}`, { line: 'for them' });
  while (!frames.some((f) => f.type === 'event' && f.topic === `logs:${appB}`))
    await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(
    frames.filter((f) => f.type === 'event').map((f) => f.topic),
    [`logs:${appB}`],
  );
  ws.close();
});

test('a disabled operator: their token opens no socket; enabling restores it', async () => {
  const d = await team.operator('gone', 'admin');
  await team.setRow(d.id, { disabled: 1 });
  const ws = await openSocket(wsUrl(s.url), { authorization: `Bearer ${d.token}` }).catch((e) => e);
  assert.equal(ws.status, 401);
  await team.setRow(d.id, { disabled: 0 });
  const back = await openSocket(wsUrl(s.url), { authorization: `Bearer ${d.token}` });
  back.close();
});

test('an instance backup event on the backups topic needs instance.read; app events still reach app.read', async () => {
  const o = await team.operator('backup-watcher', 'admin');
  const narrow = await team.tokenOf(o.id, { scopes: ['app.read', 'self.read'], appIds: null });
  const frames = async (authorization: string) => {
    const ws = await openSocket(wsUrl(s.url), { authorization });
    const got: any[] = [];
    ws.on('message', (m) => got.push(JSON.parse(String(m))));
    ws.send(JSON.stringify({ type: 'subscribe', topic: 'backups' }));
    while (!got.some((f) => f.topic === 'backups')) await new Promise((r) => setTimeout(r, 10));
    return { ws, got };
  };
  const wide = await frames(`Bearer ${o.token}`);
  const only = await frames(`Bearer ${narrow.bearer}`);
  assert.equal(only.got[0].type, 'subscribed');
  s.env.bus.publish('backups', { type: 'backup_failed', instance_id: 'i1', run_id: 'r1', error: 'x' });
  s.env.bus.publish('backups', { type: 'backup_succeeded', app_id: appA, run_id: 'r2' });
  const events = (f: { got: any[] }) => f.got.filter((x) => x.type === 'event').map((x) => x.data.run_id);
  while (events(wide).length < 2 || events(only).length < 1) await new Promise((r) => setTimeout(r, 10));
  await new Promise((r) => setTimeout(r, 100));
  assert.deepEqual(events(wide), ['r1', 'r2']);
  assert.deepEqual(events(only), ['r2'], 'the instance backup is not shown to a token without instance.read');
  wide.ws.close();
  only.ws.close();
});

test("a preview's events name its app and its number and reach whoever reaches its app: A's previews for a deployer limited to A, never B's", async () => {
  // Git apps whose previews are real rows and real deployments; the clone fails at once (nothing
  // listens there), which still runs each deployment through the queue, its events and its end.
  const made: Array<{ id: string; name: string }> = [];
  for (const name of ['pv-alpha', 'pv-bravo']) {
    const r = await owner.req('POST', '/api/apps', {
      name,
      source: { type: 'git', repo_url: 'http://127.0.0.1:1/app.git', branch: 'main' },
    });
    assert.equal(r.status, 201, r.text);
    made.push(r.body.app);
    const set = await owner.req('PUT', `/api/apps/${r.body.app.id}/previews/settings`, { enabled: true });
    assert.equal(set.status, 200, set.text);
  }
  const [a, b] = made as [{ id: string; name: string }, { id: string; name: string }];
  const d = await team.operator('only-pv-a', 'deployer', [a.id]);
  const ws = await openSocket(wsUrl(s.url), { authorization: `Bearer ${d.token}` });
  const frames: any[] = [];
  ws.on('message', (m) => frames.push(JSON.parse(String(m))));
  const until = async (what: (f: any) => boolean) => {
    while (!frames.some(what)) await new Promise((r) => setTimeout(r, 10));
    return frames.find(what);
  };
  for (const topic of ['apps', 'deployments']) {
    ws.send(JSON.stringify({ type: 'subscribe', topic }));
    await until((f) => f.type === 'subscribed' && f.topic === topic);
  }
  const pa = await owner.req('POST', `/api/apps/${a.id}/previews`, { branch: 'feature', number: 4 });
  const pb = await owner.req('POST', `/api/apps/${b.id}/previews`, { branch: 'feature', number: 4 });
  assert.equal(pa.status, 202, pa.text);
  assert.equal(pb.status, 202, pb.text);
  const childA = `${a.name}-pr-4`;
  // Both deployments end (the clone fails); then a last event of A's closes the window.
  for (const id of [pa.body.preview.deployment_id, pb.body.preview.deployment_id])
    for (;;) {
      const row = await s.env.db
        .selectFrom('deployments')
        .select('status')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      if (row.status === 'failed') break;
      await new Promise((r) => setTimeout(r, 20));
    }
  s.env.bus.publish('apps', { type: 'status', app_id: a.id, app: a.name, status: 'sentinel' });
  await until((f) => f.topic === 'apps' && f.data?.status === 'sentinel');
  const events = frames.filter((f) => f.type === 'event').map((f) => ({ topic: f.topic, ...f.data }));
  const failed = events.find(
    (e) => e.topic === 'deployments' && e.type === 'status' && e.status === 'failed',
  );
  assert.ok(failed, JSON.stringify(events));
  assert.equal(failed.id, pa.body.preview.deployment_id);
  assert.equal(failed.app, childA);
  assert.equal(failed.parent_app_id, a.id);
  assert.equal(failed.preview_number, 4);
  const status = events.find((e) => e.topic === 'apps' && e.type === 'status' && e.app === childA);
  assert.equal(status?.parent_app_id, a.id);
  assert.equal(status?.preview_number, 4);
  assert.ok(events.some((e) => e.app === childA && e.type === 'deploy_failed'));
  assert.ok(
    events.every((e) => e.app_id !== b.id && e.parent_app_id !== b.id && !String(e.app).startsWith(b.name)),
    JSON.stringify(events.filter((e) => String(e.app).startsWith(b.name))),
  );
  // The build log of A's preview is theirs to read; B's preview's is as absent as B.
  ws.send(JSON.stringify({ type: 'subscribe', topic: `build:${pa.body.preview.deployment_id}` }));
  ws.send(JSON.stringify({ type: 'subscribe', topic: `build:${pb.body.preview.deployment_id}` }));
  const buildA = await until(
    (f) => f.topic === `build:${pa.body.preview.deployment_id}` && f.type !== 'event',
  );
  const buildB = await until((f) => f.topic === `build:${pb.body.preview.deployment_id}`);
  assert.equal(buildA.type, 'subscribed');
  assert.equal(buildB.code, 'not_found');
  ws.close();
  for (const app of made) await owner.req('DELETE', `/api/apps/${app.id}`);
});
