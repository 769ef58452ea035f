// Deployments against the real engine and a real git server (git daemon on loopback).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import WebSocket from 'ws';
import { needDocker, ensureBaseImage, dockerReachable, BASE_IMAGE } from '../_support/docker.js';
import { startTestServer, adminClient, apiToken, type Client, type TestServer } from '../_support/server.js';
import { listAppContainers } from '#lib/docker/index.js';
import { until } from './_helpers.js';
import { startGitServer, webRepo, callInApp, waitStatus, cleanupApp, type GitServer } from './_deploy.js';

let s: TestServer;
let admin: Client;
let git: GitServer | undefined;
const apps = new Set<string>();

// Without an engine every test skips (or fails under CI) through needDocker; nothing is set up.
before(async () => {
  if (!(await dockerReachable())) return;
  await ensureBaseImage();
  git = await startGitServer();
  s = await startTestServer();
  admin = await adminClient(s);
  // Short gates keep failures quick; generous enough for a loaded 2-core machine.
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

async function createApp(
  repo: string,
  opts: { health?: boolean; compose_path?: string } = {},
): Promise<{ id: string; name: string }> {
  const name = `dep-${uniq()}`;
  apps.add(name);
  const r = await admin.req('POST', '/api/apps', {
    name,
    source: {
      type: 'git',
      repo_url: git!.url(repo),
      branch: 'main',
      ...(opts.compose_path ? { compose_path: opts.compose_path } : {}),
    },
  });
  assert.equal(r.status, 201, r.text);
  if (opts.health !== false) {
    const p = await admin.req('PATCH', `/api/apps/${r.body.app.id}/services/app`, {
      port: 8080,
      health_path: '/',
    });
    assert.equal(p.status, 200, p.text);
  }
  return r.body.app;
}

async function deploy(appId: string, body: unknown = {}): Promise<any> {
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, body);
  assert.equal(r.status, 202, r.text);
  return r.body.deployment;
}

test('first deploy of a Dockerfile repo reaches succeeded, records the commit, and the app answers by name', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `web-${uniq()}`;
  const commit = await git!.commit(repo, webRepo('hello v1'), 'first version');
  const app = await createApp(repo);
  const d = await deploy(app.id);
  assert.equal(d.status, 'queued');
  assert.equal(d.trigger, 'manual');
  assert.equal(d.ref, 'main');
  const done = await waitStatus(admin, app.id, d.id, ['succeeded']);
  assert.equal(done.commit, commit);
  assert.equal(done.commit_subject, 'first version');
  assert.equal(done.image, `svc/${app.name}-app:${d.id}`);
  assert.ok(done.started_at && done.finished_at);
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'hello v1\n');
  const got = await admin.req('GET', `/api/apps/${app.id}`);
  assert.equal(got.body.app.status, 'running');
  const logs = await admin.req('GET', `/api/apps/${app.id}/deployments/${d.id}/logs`);
  const lines = logs.body.items as { seq: number; line: string; stream: string }[];
  assert.deepEqual(
    lines.map((l) => l.seq),
    lines.map((_, i) => i + 1),
    'seq numbers are dense and ordered',
  );
  assert.ok(
    lines.some((l) => l.stream === 'build'),
    'build output is in the log',
  );
  assert.ok(lines.some((l) => /probing GET \/ on port 8080/.test(l.line)));
  const page = await admin.req('GET', `/api/apps/${app.id}/deployments/${d.id}/logs?after=2&limit=3`);
  assert.deepEqual(
    page.body.items.map((l: any) => l.seq),
    [3, 4, 5],
  );
  assert.equal(page.body.next_after, 5);
  const list = await admin.req('GET', `/api/apps/${app.id}/deployments`);
  assert.equal(list.body.items[0].id, d.id);
  const events = await s.env.db
    .selectFrom('deployment_events')
    .select('status')
    .where('deployment_id', '=', d.id)
    .orderBy('id')
    .execute();
  assert.deepEqual(
    events.map((e) => e.status),
    ['queued', 'cloning', 'building', 'deploying', 'health_checking', 'succeeded'],
  );
});

test('a compose repo with two services and a healthcheck deploys; secrets are masked in the log', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `compose-${uniq()}`;
  await git!.commit(repo, {
    'web/index.html': 'compose web\n',
    'web/Dockerfile': `FROM ${BASE_IMAGE}\nCOPY index.html /www/index.html\nARG TOKEN\nRUN echo "token is $TOKEN"\nCMD ["sh", "-c", "trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]\n`,
    'compose.yaml': [
      'services:',
      '  web:',
      '    build:',
      '      context: web',
      '      args:',
      '        TOKEN: ${API_TOKEN}',
      '    depends_on:',
      '      cache:',
      '        condition: service_healthy',
      '    healthcheck:',
      '      test: ["CMD", "timeout", "3", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:8080/"]',
      '      interval: 1s',
      '      retries: 30',
      '  cache:',
      `    image: ${BASE_IMAGE}`,
      `    command: ["sh", "-c", "trap 'exit 0' TERM; mkdir -p /www && echo cache > /www/index.html && httpd -f -p 6379 -h /www & wait"]`,
      '    healthcheck:',
      '      test: ["CMD", "timeout", "3", "wget", "-q", "-O", "/dev/null", "http://127.0.0.1:6379/"]',
      '      interval: 1s',
      '      retries: 30',
      '',
    ].join('\n'),
  });
  const app = await createApp(repo, { health: false });
  const env = await admin.req('PUT', `/api/apps/${app.id}/env`, {
    items: [{ key: 'API_TOKEN', value: 'sup3r-s3cret-value', secret: true }],
  });
  assert.equal(env.status, 200, env.text);
  const d = await deploy(app.id);
  const done = await waitStatus(admin, app.id, d.id, ['succeeded']);
  assert.deepEqual(Object.keys(done.images).sort(), ['cache', 'web']);
  assert.equal(done.images.cache, BASE_IMAGE);
  assert.equal(await callInApp(s.env.engine, app.name, 'http://web:8080/'), 'compose web\n');
  assert.equal(await callInApp(s.env.engine, app.name, 'http://cache:6379/'), 'cache\n');
  const logs = (await admin.req('GET', `/api/apps/${app.id}/deployments/${d.id}/logs`)).body.items as {
    line: string;
  }[];
  const all = logs.map((l) => l.line).join('\n');
  assert.ok(!all.includes('sup3r-s3cret-value'), 'the secret never reaches the log');
  assert.match(all, /token is \*\*\*/);
});

test('bad input: refs with shell characters, unknown ids, rollback without images, concurrency out of range', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `bad-${uniq()}`;
  await git!.commit(repo, webRepo('bad'));
  const app = await createApp(repo);
  for (const ref of ['main;rm -rf /', '$(id)', '-upload-pack=x', '../etc', 'a b', '`x`', 'main|cat']) {
    const r = await admin.req('POST', `/api/apps/${app.id}/deployments`, { ref });
    assert.equal(r.status, 400, `${ref}: ${r.text}`);
    assert.equal(r.body.code, 'bad_request');
  }
  assert.equal((await admin.req('POST', `/api/apps/${app.id}/deployments`, { ref: 42 })).status, 400);
  assert.equal((await admin.req('POST', `/api/apps/${app.id}/deployments`, { extra: 1 })).status, 400);
  const unknown = '0'.repeat(26);
  assert.equal((await admin.req('GET', `/api/apps/${app.id}/deployments/${unknown}`)).status, 404);
  assert.equal((await admin.req('POST', `/api/apps/${app.id}/deployments/${unknown}/cancel`)).status, 404);
  assert.equal((await admin.req('POST', `/api/apps/${app.id}/deployments/${unknown}/rollback`)).status, 404);
  assert.equal((await admin.req('GET', `/api/apps/${app.id}/deployments/${unknown}/logs`)).status, 404);
  assert.equal((await admin.req('GET', `/api/apps/${app.id}/deployments/not-an-id`)).status, 400);
  assert.equal((await admin.req('GET', `/api/apps/${unknown}/deployments`)).status, 404);
  for (const bad of [0, 9, 'x', 1.5, null]) {
    const r = await admin.req('PUT', '/api/instance/deploy-concurrency', { concurrency: bad });
    assert.equal(r.status, 400, `${bad}: ${r.text}`);
  }
  assert.equal((await admin.req('GET', '/api/instance/deploy-concurrency')).body.concurrency, 1);
  // A failed deployment has no kept images: rolling back to it is refused.
  await git!.commit(repo, { Dockerfile: `FROM ${BASE_IMAGE}\nRUN exit 3\n` }, 'broken build');
  const d = await deploy(app.id);
  const failed = await waitStatus(admin, app.id, d.id, ['failed']);
  assert.match(failed.error, /build failed|returned a non-zero code/);
  const rb = await admin.req('POST', `/api/apps/${app.id}/deployments/${d.id}/rollback`);
  assert.equal(rb.status, 409, rb.text);
  // Finished deployments cannot be canceled.
  assert.equal((await admin.req('POST', `/api/apps/${app.id}/deployments/${d.id}/cancel`)).status, 409);
  // The app never ran: failed, not running.
  assert.equal((await admin.req('GET', `/api/apps/${app.id}`)).body.app.status, 'failed');
});

test('a second manual deploy while one is active is 409; cancel during a slow build leaves the running version', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `slow-${uniq()}`;
  await git!.commit(repo, webRepo('steady v1'));
  const app = await createApp(repo);
  const first = await deploy(app.id);
  await waitStatus(admin, app.id, first.id, ['succeeded']);
  const before = (await listAppContainers(s.env.engine, app.name)).map((c) => c.id);
  await git!.commit(repo, webRepo('never served', `RUN echo ${uniq()} && sleep 120`), 'slow build');
  const d = await deploy(app.id);
  const again = await admin.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(again.status, 409, again.text);
  assert.equal(again.body.code, 'conflict');
  await until(
    'the slow build to be running',
    async () => {
      const logs = (await admin.req('GET', `/api/apps/${app.id}/deployments/${d.id}/logs`)).body.items as {
        line: string;
      }[];
      return logs.some((l) => /sleep 120/.test(l.line));
    },
    120_000,
    250,
  );
  const c = await admin.req('POST', `/api/apps/${app.id}/deployments/${d.id}/cancel`);
  assert.equal(c.status, 200, c.text);
  assert.equal(c.body.deployment.status, 'canceled');
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'steady v1\n');
  assert.deepEqual(
    (await listAppContainers(s.env.engine, app.name)).map((x) => x.id),
    before,
    'the old containers were not touched',
  );
  const imgs = await s.env.engine.docker.listImages({ filters: { label: [`svc.deployment=${d.id}`] } });
  assert.equal(imgs.length, 0);
  // After a cancel, a new deploy is accepted at once.
  await git!.commit(repo, webRepo('steady v2'));
  const next = await deploy(app.id);
  await waitStatus(admin, app.id, next.id, ['succeeded']);
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'steady v2\n');
});

test('a new version failing its health check ends failed and the old version keeps answering; rollback restores earlier content', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `hc-${uniq()}`;
  await git!.commit(repo, webRepo('version one'));
  const app = await createApp(repo);
  const v1 = await deploy(app.id);
  await waitStatus(admin, app.id, v1.id, ['succeeded']);
  await git!.commit(repo, webRepo('version two'));
  const v2 = await deploy(app.id);
  await waitStatus(admin, app.id, v2.id, ['succeeded']);
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'version two\n');

  await git!.commit(
    repo,
    webRepo('version three (sick)', 'HEALTHCHECK --interval=1s --timeout=2s --retries=2 CMD ["false"]'),
  );
  const v3 = await deploy(app.id);
  const failed = await waitStatus(admin, app.id, v3.id, ['failed']);
  assert.match(failed.error, /unhealthy/);
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'version two\n');
  assert.ok(
    (await listAppContainers(s.env.engine, app.name)).every((c) => c.deployment === v2.id),
    'only v2 containers remain',
  );
  assert.equal((await admin.req('GET', `/api/apps/${app.id}`)).body.app.status, 'running');

  const rb = await admin.req('POST', `/api/apps/${app.id}/deployments/${v1.id}/rollback`);
  assert.equal(rb.status, 202, rb.text);
  assert.equal(rb.body.deployment.trigger, 'rollback');
  const done = await waitStatus(admin, app.id, rb.body.deployment.id, ['succeeded']);
  assert.equal(done.image, v1.id ? `svc/${app.name}-app:${v1.id}` : '');
  assert.equal(await callInApp(s.env.engine, app.name, 'http://app:8080/'), 'version one\n');
  const statuses = await s.env.db
    .selectFrom('deployment_events')
    .select('status')
    .where('deployment_id', '=', done.id)
    .orderBy('id')
    .execute();
  assert.ok(
    !statuses.some((e) => e.status === 'cloning' || e.status === 'building'),
    'a rollback neither clones nor builds',
  );
});

test('a redeploy loses no request from a client calling the service by name every 20 ms', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `zero-${uniq()}`;
  await git!.commit(repo, webRepo('blue'));
  const app = await createApp(repo);
  const d1 = await deploy(app.id);
  await waitStatus(admin, app.id, d1.id, ['succeeded']);
  const engine = s.env.engine;
  const client = await engine.docker.createContainer({
    Image: BASE_IMAGE,
    Labels: { 'svc.test': 'client' },
    Cmd: [
      'sh',
      '-c',
      'ok=0; fail=0; while [ ! -f /tmp/stop ]; do if timeout 5 wget -q -O /tmp/body http://app:8080/ 2>/tmp/err; then ok=$((ok+1)); cat /tmp/body >> /tmp/seen; else fail=$((fail+1)); read u rest < /proc/uptime; echo "$u $(cat /tmp/err)" >> /tmp/fails; fi; echo "$ok $fail" > /tmp/count; sleep 0.02; done; echo done > /tmp/finished; sleep 600',
    ],
    HostConfig: { NetworkMode: `svc-${app.name}` },
  });
  try {
    await client.start();
    const read = async (file: string) => {
      const { execIn } = await import('./_helpers.js');
      return (await execIn(engine, client.id, ['cat', file])).stdout.toString();
    };
    await until(
      'the client to get answers',
      async () => Number((await read('/tmp/count')).split(' ')[0]) > 20,
      60_000,
      250,
    );
    const deps: string[] = [];
    for (const color of ['green', 'blue again']) {
      await git!.commit(repo, webRepo(color));
      const d = await deploy(app.id);
      deps.push(d.id);
      await waitStatus(admin, app.id, d.id, ['succeeded']);
      await until(
        `answers from ${color}`,
        async () => (await read('/tmp/seen')).trimEnd().endsWith(color),
        60_000,
        250,
      );
    }
    const { execIn } = await import('./_helpers.js');
    await execIn(engine, client.id, ['touch', '/tmp/stop']);
    await until(
      'the client to stop',
      async () => (await read('/tmp/finished')).includes('done'),
      30_000,
      250,
    );
    const [ok, fail] = (await read('/tmp/count')).trim().split(' ').map(Number);
    const seen = (await read('/tmp/seen')).split('\n');
    console.log(`zero-downtime: ${ok} requests answered, ${fail} failed across two redeploys`);
    if (fail) {
      const { readFileSync } = await import('node:fs');
      const uptime = Number(readFileSync('/proc/uptime', 'utf8').split(' ')[0]);
      const bootMs = Date.now() - uptime * 1000;
      for (const f of (await read('/tmp/fails')).trim().split('\n')) {
        const [u, ...rest] = f.split(' ');
        console.log(`failure at ${new Date(bootMs + Number(u) * 1000).toISOString()}: ${rest.join(' ')}`);
      }
      for (const d of deps) {
        const items = (await admin.req('GET', `/api/apps/${app.id}/deployments/${d}/logs`)).body
          .items as any[];
        for (const l of items.filter((x) => x.stream === 'deploy'))
          console.log(`${l.at} ${d.slice(-4)} ${l.line}`);
      }
    }
    assert.equal(fail, 0, `${fail} of ${ok + fail!} requests failed`);
    assert.ok(ok! > 50);
    assert.ok(seen.includes('green') && seen.includes('blue again'));
  } finally {
    await client.remove({ force: true, v: true }).catch(() => {});
  }
});

test('two apps deploy in parallel with concurrency 2', async (t) => {
  if (!(await needDocker(t))) return;
  const put = await admin.req('PUT', '/api/instance/deploy-concurrency', { concurrency: 2 });
  assert.equal(put.status, 200, put.text);
  assert.equal(put.body.concurrency, 2);
  try {
    const made: { id: string; name: string }[] = [];
    for (let i = 0; i < 2; i++) {
      const repo = `par-${uniq()}`;
      await git!.commit(repo, webRepo(`parallel ${i}`, `RUN echo ${uniq()} && sleep 6`));
      made.push(await createApp(repo));
    }
    const deps: any[] = [];
    for (const a of made) deps.push(await deploy(a.id));
    let overlap = false;
    const running = new Set(['cloning', 'building', 'deploying', 'health_checking']);
    await until(
      'both deployments to finish',
      async () => {
        const active = (await admin.req('GET', '/api/deployments/active')).body.items as {
          id: string;
          status: string;
        }[];
        const mine = active.filter((d) => deps.some((x) => x.id === d.id));
        if (mine.filter((d) => running.has(d.status)).length === 2) overlap = true;
        return mine.length === 0;
      },
      240_000,
      100,
    );
    assert.ok(overlap, 'both were running at the same time');
    for (const [i, d] of deps.entries()) {
      const r = await admin.req('GET', `/api/apps/${made[i]!.id}/deployments/${d.id}`);
      assert.equal(r.body.deployment.status, 'succeeded', r.body.deployment.error);
    }
  } finally {
    await admin.req('PUT', '/api/instance/deploy-concurrency', { concurrency: 1 });
  }
});

test('a WebSocket client subscribing late to build:<id> receives the whole log in order, complete', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `ws-${uniq()}`;
  const lines = Array.from({ length: 40 }, (_, i) => `echo line-${i}`).join(' && ');
  await git!.commit(repo, webRepo('ws', `RUN ${lines} && sleep 4 && echo ${uniq()} && ${lines}`));
  const app = await createApp(repo);
  const token = await apiToken(admin, 'ws-deploy');
  const d = await deploy(app.id);
  // Late: the build has already written lines.
  await until(
    'some log lines',
    async () =>
      (await admin.req('GET', `/api/apps/${app.id}/deployments/${d.id}/logs`)).body.items.length > 5,
    120_000,
    100,
  );
  const ws = new WebSocket(s.url.replace('http', 'ws') + '/api/ws', {
    headers: { authorization: `Bearer ${token}` },
  });
  const got: any[] = [];
  ws.on('message', (m) => {
    const msg = JSON.parse(m.toString());
    if (msg.type === 'event' && msg.topic === `build:${d.id}`) got.push(msg.data);
  });
  await new Promise((r) => ws.once('open', r));
  ws.send(JSON.stringify({ type: 'subscribe', topic: `build:${d.id}` }));
  await waitStatus(admin, app.id, d.id, ['succeeded']);
  const stored = (await admin.req('GET', `/api/apps/${app.id}/deployments/${d.id}/logs`)).body.items as any[];
  await until('every line over the socket', async () => got.length >= stored.length, 30_000, 100);
  ws.close();
  assert.deepEqual(
    got.map((x) => x.seq),
    stored.map((x) => x.seq),
    'no gap, no duplicate, in order',
  );
  assert.deepEqual(
    got.map((x) => x.line),
    stored.map((x) => x.line),
  );
  assert.ok(stored.filter((x) => /^line-39$/.test(x.line)).length >= 1);
});

test('stats:, logs: and host topics produce data only while subscribed', async (t) => {
  if (!(await needDocker(t))) return;
  const repo = `streams-${uniq()}`;
  const files = webRepo('streams');
  files.Dockerfile = files.Dockerfile!.replace(
    "trap 'exit 0' TERM;",
    "echo hello-stdout; echo hello-stderr >&2; trap 'exit 0' TERM;",
  );
  await git!.commit(repo, files);
  const app = await createApp(repo);
  const d = await deploy(app.id);
  await waitStatus(admin, app.id, d.id, ['succeeded']);
  await callInApp(s.env.engine, app.name, 'http://app:8080/');
  const bus = s.env.bus;
  // What the producer publishes on the topic, seen without subscribing to it (which would start it).
  let produced = 0;
  const offAny = bus.onAny((e) => {
    if (e.topic === `stats:${app.id}`) produced++;
  });
  const logs: any[] = [];
  const stats: any[] = [];
  const host: any[] = [];
  assert.equal(produced, 0, 'nothing is collected before anyone subscribes');
  const offLogs = await bus.subscribe(`logs:${app.id}`, (e) => logs.push(e.data));
  const offStats = await bus.subscribe(`stats:${app.id}`, (e) => stats.push(e.data));
  const offHost = await bus.subscribe('host', (e) => host.push(e.data));
  try {
    await until('runtime log lines', async () => logs.length > 0, 30_000, 200);
    await until('stats', async () => stats.some((x) => x.items.length > 0), 30_000, 200);
    await until('host metrics', async () => host.length > 0, 30_000, 200);
    await until(
      'both streams',
      async () =>
        logs.some((l) => l.stream === 'stderr' && l.line === 'hello-stderr') &&
        logs.some((l) => l.stream === 'stdout' && l.line === 'hello-stdout'),
      30_000,
      200,
    );
    assert.equal(logs[0].service, 'app');
    const st = stats.find((x) => x.items.length).items[0];
    assert.equal(st.service, 'app');
    assert.equal(typeof st.cpu_percent, 'number');
    assert.ok(st.memory_bytes > 0);
    assert.ok(host[0].memory.total_bytes > 0 && host[0].disk.total_bytes > 0 && host[0].load.length === 3);
    // A second, late subscriber gets the last lines replayed.
    const late: any[] = [];
    const offLate = await bus.subscribe(`logs:${app.id}`, (e) => late.push(e.data));
    assert.ok(late.length > 0);
    offLate();
    offLogs();
    offStats();
    // The stats producer stops with its last subscriber. The host topic (its own timer, 3 s
    // against the stats' 2 s) is the clock: after two of its ticks a running stats producer
    // would have published again; a stopped one publishes nothing more.
    const stoppedAt = produced;
    const tick = host.length;
    await until(
      'two host ticks after the last stats subscriber left',
      async () => host.length >= tick + 2,
      60_000,
      100,
    );
    assert.equal(produced, stoppedAt, 'stats are not collected once nobody listens');
    assert.equal(bus.subscriberCount(`stats:${app.id}`), 0);
  } finally {
    offHost();
    offAny();
  }
});
