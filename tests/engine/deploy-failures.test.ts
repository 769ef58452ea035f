// Failure paths and races of deployments over the real server, engine and git remote:
// image retention (SVC_KEEP_IMAGES) and rolling back to a pruned deployment, the deploy log
// caps, and concurrent requests (deploy triggers, app names, a webhook against a manual deploy,
// env replacements). One server, one git remote and the shared base image for the whole file.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import {
  needDocker,
  ensureBaseImage,
  dockerReachable,
  BASE_IMAGE,
  DOCKER_SOCKET,
} from '../_support/docker.js';
import { startTestServer, adminClient, reveal, type Client, type TestServer } from '../_support/server.js';
import { createEngine } from '#lib/docker/index.js';
import { MAX_LOG_BYTES, MAX_LOG_LINES } from '#lib/deploy/log.js';
import { githubPush } from '../unit/webhooks/_payloads.js';
import { until } from './_helpers.js';
import { startGitServer, webRepo, callInApp, waitStatus, cleanupApp, type GitServer } from './_deploy.js';

const direct = createEngine({ socketPath: DOCKER_SOCKET });
let s: TestServer | undefined;
let admin: Client;
let git: GitServer | undefined;
const apps = new Set<string>();
const KEEP = 2;

// Without an engine every test skips (or fails under CI) through needDocker; nothing is set up.
before(async () => {
  if (!(await dockerReachable())) return;
  await ensureBaseImage();
  git = await startGitServer();
  s = await startTestServer({ SVC_KEEP_IMAGES: String(KEEP) });
  s.env.deployments.opts.healthTimeoutMs = 60_000;
  s.env.deployments.opts.settleMs = 1_500;
  admin = await adminClient(s);
});

after(async () => {
  if (s) {
    for (const a of apps) await cleanupApp(direct, a);
    await s.stop();
  }
  await git?.stop();
});

const uniq = () => randomBytes(3).toString('hex');

async function gitApp(
  label: string,
  files: Record<string, string>,
  health = true,
): Promise<{ id: string; name: string; repo: string }> {
  const repo = `${label}-${uniq()}`;
  await git!.commit(repo, files);
  const name = `${label}-${uniq()}`;
  apps.add(name);
  const r = await admin.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git!.url(repo), branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  if (health) {
    const p = await admin.req('PATCH', `/api/apps/${r.body.app.id}/services/app`, {
      port: 8080,
      health_path: '/',
    });
    assert.equal(p.status, 200, p.text);
  }
  return { id: r.body.app.id, name, repo };
}

async function deploy(appId: string): Promise<any> {
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  return r.body.deployment;
}

async function imagesOf(depId: string): Promise<string[]> {
  const imgs = await direct.docker.listImages({ filters: { label: [`svc.deployment=${depId}`] } });
  return imgs.flatMap((i) => i.RepoTags ?? []);
}

/** Every log line of a deployment, through the API's pages. */
async function allLogs(
  appId: string,
  depId: string,
): Promise<{ seq: number; stream: string; line: string }[]> {
  const out: { seq: number; stream: string; line: string }[] = [];
  let after: number | undefined;
  for (;;) {
    const r = await admin.req(
      'GET',
      `/api/apps/${appId}/deployments/${depId}/logs?limit=5000${after === undefined ? '' : `&after=${after}`}`,
    );
    assert.equal(r.status, 200, r.text);
    out.push(...r.body.items);
    if (r.body.next_after === undefined) return out;
    after = r.body.next_after;
  }
}

test('SVC_KEEP_IMAGES: the oldest images are pruned, the kept ones roll back, a pruned one answers a clear 409', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await gitApp('keep', webRepo('v1', `RUN echo ${uniq()}`));
  const deps: any[] = [];
  for (const v of ['v1', 'v2', 'v3']) {
    if (v !== 'v1') await git!.commit(app.repo, webRepo(v, `RUN echo ${uniq()}`));
    const d = await deploy(app.id);
    await waitStatus(admin, app.id, d.id, ['succeeded']);
    deps.push(d);
  }
  const [v1, v2, v3] = deps;
  // Pruning runs once the old containers are retired, after the deployment succeeded.
  await until(
    "the oldest deployment's image to be pruned",
    async () => (await imagesOf(v1.id)).length === 0,
    60_000,
    250,
  );
  assert.deepEqual(await imagesOf(v2.id), [`svc/${app.name}-app:${v2.id}`]);
  assert.deepEqual(await imagesOf(v3.id), [`svc/${app.name}-app:${v3.id}`]);

  const pruned = await admin.req('POST', `/api/apps/${app.id}/deployments/${v1.id}/rollback`);
  assert.equal(pruned.status, 409, pruned.text);
  assert.equal(pruned.body.code, 'conflict');
  assert.match(
    pruned.body.error,
    new RegExp(
      `^The images of deployment ${v1.id} are no longer kept \\(svc/${app.name}-app:${v1.id}\\); keep more with SVC_KEEP_IMAGES$`,
    ),
  );
  const active = (await admin.req('GET', '/api/deployments/active')).body.items as { app_id: string }[];
  assert.ok(!active.some((d) => d.app_id === app.id), 'the refused rollback queued nothing');
  assert.equal(await callInApp(direct, app.name, 'http://app:8080/'), 'v3\n');

  const kept = await admin.req('POST', `/api/apps/${app.id}/deployments/${v2.id}/rollback`);
  assert.equal(kept.status, 202, kept.text);
  await waitStatus(admin, app.id, kept.body.deployment.id, ['succeeded']);
  assert.equal(await callInApp(direct, app.name, 'http://app:8080/'), 'v2\n');
  // The image in use is never pruned: both kept deployments still have theirs.
  assert.equal((await imagesOf(v2.id)).length, 1);
  assert.equal((await imagesOf(v3.id)).length, 1);
});

test('a repository with bad compose input: each deployment fails with the reason, and nothing of the app reaches the engine', async (t) => {
  if (!(await needDocker(t))) return;
  let laughs = 'a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n';
  for (let i = 1; i < 10; i++)
    laughs += `a${i}: &a${i} [${Array(9)
      .fill(`*a${i - 1}`)
      .join(',')}]\n`;
  const inputs: Array<[string, RegExp]> = [
    ['services: [not yaml', /yaml|parse|flow/i],
    [`${laughs}services:\n  web:\n    image: ${BASE_IMAGE}\n`, /alias|anchor|large|expan/i],
    [
      `services:\n  web:\n    image: ${BASE_IMAGE}\n    depends_on: [ghost]\nvolumes:\n  v: {}\nnetworks:\n  n: {}\n`,
      /ghost/,
    ],
    [
      `services:\n  a: {image: ${BASE_IMAGE}, depends_on: [b]}\n  b: {image: ${BASE_IMAGE}, depends_on: [a]}\n`,
      /cycle|circular/i,
    ],
    [
      `services:\n  web:\n    image: ${BASE_IMAGE}\n    privileged: true\n    volumes: [data:/data]\nvolumes:\n  data: {}\n`,
      /privileged/,
    ],
  ];
  const app = await gitApp('badcompose', { 'compose.yaml': inputs[0]![0] }, false);
  for (const [i, [text, reason]] of inputs.entries()) {
    if (i > 0) await git!.commit(app.repo, { 'compose.yaml': text });
    const d = await deploy(app.id);
    const done = await waitStatus(admin, app.id, d.id, ['failed']);
    assert.match(String(done.error), reason, `input ${i}: ${done.error}`);
    // Checked after every attempt: a later one must not be the first to notice a leftover.
    const label = { label: [`svc.app=${app.name}`] };
    assert.deepEqual(
      (await direct.docker.listContainers({ all: true, filters: label })).map((c) => c.Names),
      [],
      `input ${i}: containers`,
    );
    assert.deepEqual(
      (await direct.docker.listNetworks({ filters: label })).map((n) => n.Name),
      [],
      `input ${i}: networks`,
    );
    assert.deepEqual(
      ((await direct.docker.listVolumes({ filters: label })).Volumes ?? []).map((v) => v.Name),
      [],
      `input ${i}: volumes`,
    );
    assert.deepEqual(
      (await direct.docker.listImages({ filters: label })).map((x) => x.RepoTags),
      [],
      `input ${i}: images`,
    );
  }
});

test(`the deploy log stops at ${MAX_LOG_LINES} lines, and says so as its last line; the deployment still succeeds`, async (t) => {
  if (!(await needDocker(t))) return;
  const app = await gitApp(
    'loglines',
    webRepo('many lines', `RUN echo ${uniq()} && seq 1 ${MAX_LOG_LINES + 2000}`),
  );
  const d = await deploy(app.id);
  const done = await waitStatus(admin, app.id, d.id, ['succeeded']);
  assert.equal(done.status, 'succeeded');
  const lines = await allLogs(app.id, d.id);
  assert.equal(lines.length, MAX_LOG_LINES);
  assert.deepEqual(
    lines.map((l) => l.seq),
    lines.map((_, i) => i + 1),
    'dense, in order',
  );
  const last = lines.at(-1)!;
  assert.equal(last.stream, 'deploy');
  assert.equal(
    last.line,
    `log truncated: more than ${MAX_LOG_LINES} lines or ${MAX_LOG_BYTES / 1024 / 1024} MiB`,
  );
  assert.ok(
    lines.some((l) => l.line === '1'),
    'the build output is there up to the cap',
  );
  assert.ok(!lines.some((l) => l.line === String(MAX_LOG_LINES + 2000)), 'and not past it');
  assert.equal(await callInApp(direct, app.name, 'http://app:8080/'), 'many lines\n');
});

test(`the deploy log stops at ${MAX_LOG_BYTES / 1024 / 1024} MiB, and says so as its last line`, async (t) => {
  if (!(await needDocker(t))) return;
  // 700 lines of 8000 characters: about 5.3 MiB of build output.
  const app = await gitApp(
    'logbytes',
    webRepo('long lines', `RUN echo ${uniq()} && yes "$(head -c 8000 /dev/zero | tr '\\0' x)" | head -n 700`),
  );
  const d = await deploy(app.id);
  await waitStatus(admin, app.id, d.id, ['succeeded']);
  const lines = await allLogs(app.id, d.id);
  const last = lines.at(-1)!;
  assert.equal(
    last.line,
    `log truncated: more than ${MAX_LOG_LINES} lines or ${MAX_LOG_BYTES / 1024 / 1024} MiB`,
  );
  const long = lines.filter((l) => /^x{8000}$/.test(l.line)).length;
  assert.ok(long > 500 && long < 700, `${long} long lines kept`);
  const bytes = lines.reduce((n, l) => n + Buffer.byteLength(l.line), 0);
  assert.ok(bytes <= MAX_LOG_BYTES + 200, `${bytes} bytes stored`);
  assert.ok(bytes > MAX_LOG_BYTES - 8200, `${bytes} bytes stored: filled up to the cap`);
});

test('races: two deploy triggers at once for one app are one 202 and one 409, every time', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await gitApp('race-dep', webRepo('race'));
  for (let round = 0; round < 5; round++) {
    const rs = await Promise.all([0, 1].map(() => admin.req('POST', `/api/apps/${app.id}/deployments`, {})));
    assert.deepEqual(rs.map((r) => r.status).sort(), [202, 409], rs.map((r) => r.text).join('\n'));
    const refused = rs.find((r) => r.status === 409)!;
    assert.equal(refused.body.code, 'conflict');
    const accepted = rs.find((r) => r.status === 202)!.body.deployment;
    const c = await admin.req('POST', `/api/apps/${app.id}/deployments/${accepted.id}/cancel`);
    assert.equal(c.status, 200, c.text);
    assert.equal(c.body.deployment.status, 'canceled');
  }
  const list = (await admin.req('GET', `/api/apps/${app.id}/deployments`)).body.items as { status: string }[];
  assert.equal(list.length, 5);
  assert.ok(list.every((d) => d.status === 'canceled'));
});

test('races: two apps created with the same name at once are one 201 and one 409', async (t) => {
  if (!(await needDocker(t))) return;
  for (let round = 0; round < 5; round++) {
    const name = `race-name-${uniq()}`;
    apps.add(name);
    const body = { name, source: { type: 'image', image: BASE_IMAGE } };
    const rs = await Promise.all([0, 1].map(() => admin.req('POST', '/api/apps', body)));
    assert.deepEqual(rs.map((r) => r.status).sort(), [201, 409], rs.map((r) => r.text).join('\n'));
    assert.equal(rs.find((r) => r.status === 409)!.body.code, 'conflict');
    const all = (await admin.req('GET', '/api/apps')).body.items as { name: string }[];
    assert.equal(all.filter((a) => a.name === name).length, 1);
  }
});

test('races: a push webhook against a manual deploy: the push is never lost, two never run at once, the newest commit serves', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await gitApp('race-hook', webRepo('hook v0'));
  const secret = (await admin.req('POST', `/api/apps/${app.id}/webhook/regenerate`)).body.secret as string;
  assert.ok(secret);
  let delivery = 0;
  for (let round = 1; round <= 2; round++) {
    const sha = await git!.commit(app.repo, webRepo(`hook v${round}`), `round ${round}`);
    const body = Buffer.from(JSON.stringify(githubPush('refs/heads/main', sha)));
    const hook = fetch(`${s!.url}/webhooks/${app.id}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-github-event': 'push',
        'x-github-delivery': `race-${uniq()}-${++delivery}`,
        'x-hub-signature-256': `sha256=${createHmac('sha256', secret).update(body).digest('hex')}`,
      },
      body: new Uint8Array(body),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
    const [manual, pushed] = await Promise.all([
      admin.req('POST', `/api/apps/${app.id}/deployments`, {}),
      hook,
    ]);
    assert.ok(manual.status === 202 || manual.status === 409, `manual: ${manual.status} ${manual.text}`);
    assert.equal(pushed.status, 202, JSON.stringify(pushed.body));
    const ids = [pushed.body.deployment.id, ...(manual.status === 202 ? [manual.body.deployment.id] : [])];
    let overlap = false;
    await until(
      'both to finish',
      async () => {
        const active = (
          (await admin.req('GET', '/api/deployments/active')).body.items as {
            app_id: string;
            status: string;
          }[]
        ).filter((d) => d.app_id === app.id);
        if (active.filter((d) => d.status !== 'queued').length > 1) overlap = true;
        return active.length === 0;
      },
      240_000,
      100,
    );
    assert.equal(overlap, false, 'two deployments of one app ran at once');
    for (const id of ids) {
      const d = (await admin.req('GET', `/api/apps/${app.id}/deployments/${id}`)).body.deployment;
      assert.equal(d.status, 'succeeded', `${d.trigger}: ${d.status} ${d.error}`);
    }
    assert.equal(await callInApp(direct, app.name, 'http://app:8080/'), `hook v${round}\n`);
  }
});

test('races: concurrent env replacements end as one of the two sets, never a mix', async (t) => {
  if (!(await needDocker(t))) return;
  const name = `race-env-${uniq()}`;
  apps.add(name);
  const created = await admin.req('POST', '/api/apps', {
    name,
    source: { type: 'image', image: BASE_IMAGE },
  });
  assert.equal(created.status, 201, created.text);
  const id = created.body.app.id;
  const setA = [
    ...['A1', 'A2', 'A3', 'A4', 'A5'].map((key) => ({ key, value: `a-${key}`, secret: false })),
    { key: 'SHARED', value: 'from-a', secret: true },
  ];
  const setB = [
    ...['B1', 'B2', 'B3'].map((key) => ({ key, value: `b-${key}`, secret: false })),
    { key: 'SHARED', value: 'from-b', secret: false },
  ];
  const outcomes = new Set<string>();
  for (let round = 0; round < 10; round++) {
    const order = round % 2 ? [setA, setB] : [setB, setA];
    const rs = await Promise.all(order.map((items) => admin.req('PUT', `/api/apps/${id}/env`, { items })));
    for (const r of rs) assert.equal(r.status, 200, r.text);
    const list = (await admin.req('GET', `/api/apps/${id}/env`)).body.items as {
      key: string;
      secret: boolean;
      value: string | null;
    }[];
    const shared = (await reveal(admin, id, 'SHARED')).body.value;
    const got = JSON.stringify({ list: [...list].sort((x, y) => x.key.localeCompare(y.key)), shared });
    const expect = (set: typeof setA) =>
      JSON.stringify({
        list: set
          .map((v) => ({ key: v.key, secret: v.secret, value: v.secret ? null : v.value }))
          .sort((x, y) => x.key.localeCompare(y.key)),
        shared: set.find((v) => v.key === 'SHARED')!.value,
      });
    assert.ok(got === expect(setA) || got === expect(setB), `a mix of the two: ${got}`);
    outcomes.add(got === expect(setA) ? 'a' : 'b');
  }
  console.log(`env races: the final set was ${[...outcomes].join(' and ')} across 10 rounds`);
});
