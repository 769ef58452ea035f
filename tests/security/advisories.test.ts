// Published advisories of comparable self-hosted platforms, as a catalogue: one test per class,
// each driving our equivalent surface over the real path (the dispatcher of an in-process app, a
// real server for WebSockets, a real identity provider on loopback) with that class's payloads,
// and asserting it is refused or inert. docs/security.md maps each advisory to its test.
//
// The payloads violate the API's schemas on purpose: they go through the untyped client
// (`Client.req`), the answers they must give are asserted. Reads of what was kept use the typed
// client of client/.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createHmac, randomBytes } from 'node:crypto';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import WebSocket from 'ws';
import type { SvcClient } from '../../client/index.js';
import { startTestApp, typedClient, type TestApp } from '../_support/request.js';
import { adminClient, ADMIN, Client, startTestServer, type TestServer } from '../_support/server.js';
import { people, twoApps, type People } from '../_support/people.js';
import { startOidcProvider, signInOverHttp, CookieJar } from '../_support/oidc-provider.js';
import { githubPullRequest } from '../unit/webhooks/_payloads.js';
import { httpHealthCheck } from '#lib/cluster/spec.js';
import { insertConfig } from '#lib/backups/store.js';
import { s3Binding } from '#lib/crypto/bindings.js';
import { newId } from '#lib/crypto/random.js';

const run = promisify(execFile);
const dirs: string[] = [];
let s: TestApp;
let owner: Client;
let ownerApi: SvcClient;
let team: People;
let appA: string;
let appB: string;
/** A file each shell payload would create: its existence at the end means one ran. */
let marker: string;

before(async () => {
  s = await startTestApp({ SVC_PUBLIC_URL: 'https://svc.example.org' });
  owner = await adminClient(s);
  assert.equal((await owner.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  team = people(s);
  [appA, appB] = await twoApps(owner, ['adv-a', 'adv-b'], 'nginx:1.27');
  ownerApi = await typedClient(s);
  const dir = await mkdtemp(join(tmpdir(), 'svc-advisories-'));
  dirs.push(dir);
  marker = join(dir, 'pwned');
});
after(async () => {
  await s?.stop();
  for (const d of dirs) await rm(d, { recursive: true, force: true });
});

/** Shell metacharacters in every form the advisories used, each creating the marker if it ran. */
const shellPayloads = () => [
  `x; touch ${marker}`,
  `x && touch ${marker}`,
  `$(touch ${marker})`,
  `\`touch ${marker}\``,
  `x\ntouch ${marker}`,
  `x' ; touch ${marker} ; '`,
  `--upload-pack=touch ${marker}`,
  `x|touch ${marker}`,
];

async function refusedAll(
  what: string,
  send: (payload: string) => Promise<{ status: number; text: string }>,
): Promise<void> {
  for (const p of shellPayloads()) {
    const r = await send(p);
    assert.equal(r.status, 400, `${what} ${JSON.stringify(p)}: ${r.text}`);
  }
}

test('shell injection from user fields (database, volume and network names, health checks, git URLs and branches, images, file paths, env keys): refused or inert', async () => {
  const appsBefore = (await ownerApi.GET('/api/apps')).data!.items.length;
  await refusedAll('app name', (p) =>
    owner.req('POST', '/api/apps', { name: p, source: { type: 'image', image: 'nginx:1.27' } }),
  );
  await refusedAll('image', (p) =>
    owner.req('POST', '/api/apps', { name: 'adv-img', source: { type: 'image', image: p } }),
  );
  await refusedAll('git URL', (p) =>
    owner.req('POST', '/api/apps', { name: 'adv-git', source: { type: 'git', repo_url: p, branch: 'main' } }),
  );
  await refusedAll('git branch', (p) =>
    owner.req('POST', '/api/apps', {
      name: 'adv-branch',
      source: { type: 'git', repo_url: 'https://forge.example/a/b.git', branch: p },
    }),
  );
  await refusedAll('compose path', (p) =>
    owner.req('POST', '/api/apps', {
      name: 'adv-compose',
      source: {
        type: 'git',
        repo_url: 'https://forge.example/a/b.git',
        branch: 'main',
        compose_path: `${p}.yml`,
      },
    }),
  );
  await refusedAll('dockerfile path', (p) =>
    owner.req('POST', '/api/apps', {
      name: 'adv-dockerfile',
      source: {
        type: 'git',
        repo_url: 'https://forge.example/a/b.git',
        branch: 'main',
        build: { type: 'dockerfile', path: p },
      },
    }),
  );
  await refusedAll('env key', (p) =>
    owner.req('PUT', `/api/apps/${appA}/env`, { items: [{ key: p, value: 'v', secret: false }] }),
  );
  await refusedAll('database engine', (p) => owner.req('POST', `/api/apps/${appA}/databases`, { engine: p }));
  await refusedAll('database version', (p) =>
    owner.req('POST', `/api/apps/${appA}/databases`, { engine: 'postgres', version: p }),
  );
  await refusedAll('database variable', (p) =>
    owner.req('POST', `/api/apps/${appA}/databases`, { engine: 'postgres', env_var: p }),
  );
  await refusedAll('backup volume', (p) =>
    owner.req('POST', `/api/apps/${appA}/backups`, {
      source: { type: 'volume', volume: p },
      schedule: '0 3 * * *',
      keep_last: 3,
    }),
  );
  // Volume and network names in a compose file (an inline one: the same policy runs on a repository's).
  for (const p of shellPayloads()) {
    for (const compose of [
      `services:\n  web:\n    image: nginx:1.27\n    volumes:\n      - ${JSON.stringify(`${p}:/data`)}\n`,
      `services:\n  web:\n    image: nginx:1.27\n    networks: [${JSON.stringify(p)}]\nnetworks:\n  ${JSON.stringify(p)}: {}\n`,
      `services:\n  web:\n    image: nginx:1.27\nvolumes:\n  ${JSON.stringify(p)}: {}\n`,
    ]) {
      const r = await owner.req('POST', '/api/apps', {
        name: 'adv-inline',
        source: { type: 'compose', compose },
      });
      assert.equal(r.status, 400, `compose ${JSON.stringify(p)}: ${r.text}`);
    }
  }
  // A health path is a URL path, kept as data: printable, and quoted whole where a shell sees it.
  const stub = join(dirs[0]!, 'bin');
  await run('mkdir', ['-p', stub]);
  await writeFile(join(stub, 'wget'), `#!/bin/sh\nprintf '%s\\n' "$@" > ${join(dirs[0]!, 'wget-args')}\n`);
  await chmod(join(stub, 'wget'), 0o755);
  // Without spaces (a health path is printable ASCII), these pass the path rule and are kept.
  const noSpace = [
    `x';touch\${IFS}${marker};'`,
    `$(touch\${IFS}${marker})`,
    `\`touch\${IFS}${marker}\``,
    `x;touch\${IFS}${marker}`,
  ];
  const svc = await owner.req('POST', '/api/apps/import', {
    name: 'adv-svc',
    source: { type: 'image', image: 'nginx:1.27' },
    services: { web: { port: 8080 } },
  });
  assert.equal(svc.status, 201, svc.text);
  let kept = 0;
  for (const p of [...shellPayloads(), ...noSpace]) {
    const patched = await owner.req('PATCH', `/api/apps/${svc.body.app.id}/services/web`, {
      health_path: `/${p}`,
    });
    if (patched.status === 400) continue;
    assert.equal(patched.status, 200, patched.text);
    kept++;
    // Kept: the Swarm health check built from it runs it as one argument of wget, nothing else.
    const check = httpHealthCheck('wget', 8080, `/${p}`);
    await run('sh', ['-c', check.Test![1]!], { env: { PATH: `${stub}:/usr/bin:/bin` } });
    const args = (await readFile(join(dirs[0]!, 'wget-args'), 'utf8')).split('\n').slice(0, -1);
    assert.deepEqual(args.slice(-1), [`http://127.0.0.1:8080/${p}`], JSON.stringify(p));
  }
  assert.ok(kept >= noSpace.length, 'the printable health paths were kept, and run through the shell above');
  assert.equal(existsSync(marker), false, 'a payload ran');
  const names = (await ownerApi.GET('/api/apps')).data!.items.map((a) => a.name);
  assert.equal(names.length, appsBefore + 1, `nothing was created but adv-svc: ${names}`);
});

test("missing authorisation by id: another app's backups (schedules, S3 credentials) by id, through an app one reaches", async () => {
  const secret = `s3-secret-${randomBytes(6).toString('hex')}`;
  // A config of B with an S3 destination, written as the backups store writes it (the route would
  // probe the endpoint, which does not exist here).
  const bid = newId();
  const at = new Date().toISOString();
  await insertConfig(s.env.db, {
    id: bid,
    app_id: appB,
    source: JSON.stringify({ type: 'volume', volume: 'data' }),
    schedule: '0 3 * * *',
    keep_last: 3,
    destination: JSON.stringify({
      type: 's3',
      endpoint: 'https://s3.example.org',
      region: 'eu-1',
      bucket: 'b',
      prefix: '',
      access_key_id: 'AKIAEXAMPLE',
      path_style: false,
    }),
    secret_sealed: s.env.sealer.seal(secret, s3Binding(bid)),
    enabled: 1,
    verify_after_run: 0,
    last_scheduled_at: null,
    created_at: at,
    updated_at: at,
  });
  // An admin's token limited to A: every permission on A, so only the id decides.
  const adminA = await team.operator('adv-admin-a', 'admin', null, { stepUp: true });
  const asA = await team.tokenOf(adminA.id, { scopes: null, appIds: [appA] }, { stepUp: true });
  for (const [method, path, body] of [
    ['GET', `/api/apps/${appB}/backups/${bid}`, undefined],
    ['GET', `/api/apps/${appA}/backups/${bid}`, undefined],
    ['PATCH', `/api/apps/${appA}/backups/${bid}`, { schedule: '* * * * *' }],
    ['PATCH', `/api/apps/${appB}/backups/${bid}`, { schedule: '* * * * *' }],
    ['POST', `/api/apps/${appA}/backups/${bid}/run`, {}],
    ['DELETE', `/api/apps/${appA}/backups/${bid}`, undefined],
  ] as const) {
    const r = await asA.req(method, path, body);
    assert.equal(r.status, 404, `${method} ${path}: ${r.text}`);
    assert.ok(!r.text.includes(secret));
  }
  // Whoever reaches B sees the destination, never its secret.
  const seen = await owner.req('GET', `/api/apps/${appB}/backups/${bid}`);
  assert.equal(seen.status, 200, seen.text);
  assert.ok(!seen.text.includes(secret), 'the S3 secret is never answered');
  assert.equal(seen.body.backup.schedule, '0 3 * * *', 'the schedule is as it was');
});

test('missing authorisation by id: the WebSocket terminal opens only an app one may shell into, never by a forged id', async () => {
  const srv: TestServer = await startTestServer({ SVC_ENABLE_SHELL: 'true' });
  try {
    const c = await adminClient(srv);
    const [a, b] = await twoApps(c, ['adv-sh-a', 'adv-sh-b'], 'nginx:1.27');
    const crew = people(srv);
    const viewer = await crew.operator('adv-sh-viewer', 'viewer', [a], { stepUp: true });
    const deployer = await crew.operator('adv-sh-deployer', 'deployer', [a], { stepUp: true });
    const open = (token: string, app: string, service: string) =>
      new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(
          `${srv.url.replace('http', 'ws')}/api/apps/${app}/services/${service}/shell`,
          {
            headers: { authorization: `Bearer ${token}` },
          },
        );
        ws.once('open', () => {
          ws.close();
          resolve(101);
        });
        ws.once('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
        ws.once('error', reject);
      });
    assert.equal(await open(viewer.token, a, 'web'), 403, 'a viewer never gets a shell');
    assert.equal(await open(deployer.token, b, 'web'), 404, "another app's shell is as absent as the app");
    for (const service of ['..%2F..%2Fhost', 'web%00', 'host', '%2Fbin%2Fsh'])
      assert.ok([400, 404].includes(await open(deployer.token, a, service)), service);
  } finally {
    await srv.stop();
  }
});

test('invitation escalation: no link grants more than its creator, and no listing shows a link', async () => {
  const admin = await team.operator('adv-admin', 'admin', null, { stepUp: true });
  const deployer = await team.operator('adv-dep2', 'deployer', null, { stepUp: true });
  const asAdmin = team.bearer(admin.token);
  assert.equal((await asAdmin.req('POST', '/api/operators/invitations', { role: 'owner' })).status, 403);
  assert.equal(
    (await team.bearer(deployer.token).req('POST', '/api/operators/invitations', { role: 'viewer' })).status,
    403,
  );
  const made = await asAdmin.req('POST', '/api/operators/invitations', { role: 'viewer' });
  assert.equal(made.status, 201, made.text);
  const token = /\/invite\/([A-Za-z0-9_-]+)$/.exec(made.body.invitation.url)![1]!;
  for (const who of [owner, asAdmin]) {
    const list = await who.req('GET', '/api/operators/invitations');
    assert.equal(list.status, 200, list.text);
    assert.ok(!list.text.includes(token), 'a listing never shows a link again');
  }
  assert.equal((await team.bearer(deployer.token).req('GET', '/api/operators/invitations')).status, 403);
  const me = (await owner.req('GET', '/api/auth/me')).body.user.id;
  assert.equal(
    (await asAdmin.req('POST', `/api/operators/${me}/reset`)).status,
    403,
    "an owner's reset link",
  );
});

test('secret exposure to members: a viewer reads no secret value, the audit and the export carry none', async () => {
  const secret = `sk_live_${randomBytes(8).toString('hex')}`;
  const put = await owner.req('PUT', `/api/apps/${appA}/env`, {
    items: [{ key: 'STRIPE_KEY', value: secret, secret: true }],
  });
  assert.equal(put.status, 200, put.text);
  const viewer = await team.operator('adv-viewer', 'viewer', [appA], { stepUp: true });
  const asViewer = team.bearer(viewer.token);
  for (const path of [
    `/api/apps/${appA}/env`,
    `/api/apps/${appA}/export`,
    `/api/apps/${appA}/webhook`,
    `/api/audit?limit=200`,
    `/api/apps/${appA}`,
  ]) {
    const r = await asViewer.req('GET', path);
    assert.ok(!r.text.includes(secret), `${path} showed the secret`);
  }
  assert.equal((await asViewer.req('GET', `/api/apps/${appA}/env/STRIPE_KEY/reveal`)).status, 403);
  const audit = await owner.req('GET', '/api/audit?limit=200');
  assert.ok(!audit.text.includes(secret), 'not even an owner reads it in the audit');
});

test('reset and invitation links poisoned through X-Forwarded-Host or Host: the link names the configured address', async () => {
  const victim = await team.operator('adv-victim', 'viewer');
  const evil = {
    host: 'evil.example',
    'x-forwarded-host': 'evil.example',
    'x-forwarded-proto': 'http',
    forwarded: 'host=evil.example;proto=http',
  };
  const reset = await owner.req('POST', `/api/operators/${victim.id}/reset`, undefined, evil);
  assert.equal(reset.status, 201, reset.text);
  assert.ok(reset.body.invitation.url.startsWith('https://svc.example.org/'), reset.body.invitation.url);
  const invite = await owner.req('POST', '/api/operators/invitations', { role: 'viewer' }, evil);
  assert.equal(invite.status, 201, invite.text);
  assert.ok(invite.body.invitation.url.startsWith('https://svc.example.org/'), invite.body.invitation.url);
  assert.ok(!JSON.stringify([reset.body, invite.body]).includes('evil.example'));
});

test('a password change keeps no old session: the other sessions of the operator end', async () => {
  const password = 'a long enough passphrase';
  const link = await owner.req('POST', '/api/operators/invitations', { role: 'viewer' });
  const token = /\/invite\/([A-Za-z0-9_-]+)$/.exec(link.body.invitation.url)![1]!;
  const first = new Client(s.url);
  assert.equal(
    (await first.req('POST', `/api/invitations/${token}/accept`, { username: 'adv-pw', password })).status,
    201,
  );
  const second = new Client(s.url);
  assert.equal((await second.req('POST', '/api/auth/login', { username: 'adv-pw', password })).status, 200);
  assert.equal((await second.req('GET', '/api/auth/me')).status, 200);
  await first.req('POST', '/api/auth/step-up', { password });
  const changed = await first.req('POST', '/api/auth/password', {
    current_password: password,
    new_password: 'another long passphrase',
  });
  assert.equal(changed.status, 204, changed.text);
  assert.equal((await second.req('GET', '/api/auth/me')).status, 401, 'the stolen session is over');
});

test('SSRF through a destination or an API URL (an S3 endpoint, a notification channel): private, loopback and link-local addresses refused', async () => {
  const targets = [
    'http://169.254.169.254/latest/meta-data/',
    'http://127.0.0.1:9393/api/health',
    'http://[::1]:9393/',
    'http://10.0.0.5/',
    'http://[::ffff:169.254.169.254]/',
    'http://0x7f000001/',
    'http://localhost:2019/config/',
  ];
  for (const url of targets) {
    const channel = await owner.req('POST', '/api/settings/notifications', {
      kind: 'webhook',
      name: 'adv',
      url,
      events: ['deploy_failed'],
    });
    assert.equal(channel.status, 400, `channel ${url}: ${channel.text}`);
    const backup = await owner.req('POST', `/api/apps/${appA}/backups`, {
      source: { type: 'volume', volume: 'data' },
      schedule: '0 3 * * *',
      keep_last: 3,
      destination: {
        type: 's3',
        endpoint: url,
        region: 'eu-1',
        bucket: 'b',
        access_key_id: 'AKIA',
        secret_access_key: 'x',
      },
    });
    assert.equal(backup.status, 400, `S3 endpoint ${url}: ${backup.text}`);
  }
});

test('unauthenticated preview RCE: an unsigned or fork pull request deploys nothing', async () => {
  const r = await owner.req('POST', '/api/apps', {
    name: 'adv-pr',
    source: { type: 'git', repo_url: 'https://forge.example/team/app.git', branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  const app = r.body.app.id as string;
  await owner.req('PUT', `/api/apps/${app}/previews/settings`, { enabled: true });
  const secret = (await owner.req('POST', `/api/apps/${app}/webhook/regenerate`)).body.secret as string;
  const deliver = async (payload: unknown, sign: string | null) => {
    const body = Buffer.from(JSON.stringify(payload));
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      'x-github-event': 'pull_request',
      'x-github-delivery': `adv-${randomBytes(4).toString('hex')}`,
    };
    if (sign !== null)
      headers['x-hub-signature-256'] = 'sha256=' + createHmac('sha256', sign).update(body).digest('hex');
    return s.request(`/webhooks/${app}`, { method: 'POST', headers, body: new Uint8Array(body) });
  };
  const opened = githubPullRequest('opened', { number: 9, head: 'evil' });
  assert.equal((await deliver(opened, null)).status, 401, 'unsigned');
  assert.equal((await deliver(opened, 'not-the-secret')).status, 401, 'signed with another secret');
  const fork = await deliver(githubPullRequest('opened', { number: 10, head: 'evil', fork: true }), secret);
  assert.equal(fork.status, 200);
  assert.deepEqual(await fork.json(), { ignored: 'fork' });
  const previews = await owner.req('GET', `/api/apps/${app}/previews`);
  assert.deepEqual(previews.body.items, [], 'no preview, so nothing ran');
});

test('path traversal to a file write: every path a request names stays inside its place', async () => {
  for (const p of ['../../../etc/cron.d/x', '/etc/cron.d/x', 'a/../../b', '..', '-x']) {
    const compose = await owner.req('POST', '/api/apps', {
      name: 'adv-path',
      source: {
        type: 'git',
        repo_url: 'https://forge.example/a/b.git',
        branch: 'main',
        compose_path: `${p}/svc.yml`,
      },
    });
    assert.equal(compose.status, 400, `compose_path ${p}: ${compose.text}`);
    const dockerfile = await owner.req('POST', '/api/apps', {
      name: 'adv-path',
      source: {
        type: 'git',
        repo_url: 'https://forge.example/a/b.git',
        branch: 'main',
        build: { type: 'dockerfile', path: p },
      },
    });
    assert.equal(dockerfile.status, 400, `dockerfile ${p}: ${dockerfile.text}`);
    const publish = await owner.req('POST', '/api/apps', {
      name: 'adv-path',
      source: {
        type: 'git',
        repo_url: 'https://forge.example/a/b.git',
        branch: 'main',
        build: { type: 'stack', stack: 'static', publish_dir: p },
      },
    });
    assert.equal(publish.status, 400, `publish_dir ${p}: ${publish.text}`);
    // A bind mount of a host path in a compose file: refused by the compose policy.
    const bind = await owner.req('POST', '/api/apps', {
      name: 'adv-path',
      source: {
        type: 'compose',
        compose: `services:\n  web:\n    image: nginx:1.27\n    volumes:\n      - ${JSON.stringify(`${p}:/x`)}\n`,
      },
    });
    assert.equal(bind.status, 400, `bind ${p}: ${bind.text}`);
  }
  // Names that become file names on the host (app names: the working copy, known_hosts).
  for (const name of ['../x', 'a/b', '..', '.ssh'])
    assert.equal(
      (await owner.req('POST', '/api/apps', { name, source: { type: 'image', image: 'nginx:1.27' } })).status,
      400,
      name,
    );
});

test('clickjacking: the dashboard refuses to be framed', async () => {
  const d = await startTestApp({}, { dashboard: true });
  try {
    const page = await d.request('/');
    assert.equal(page.status, 200);
    assert.equal(page.headers.get('x-frame-options'), 'DENY');
    assert.match(page.headers.get('content-security-policy') ?? '', /frame-ancestors 'none'/);
    await page.text();
  } finally {
    await d.stop();
  }
});

test("OAuth account takeover by an unverified email or a same-named account: the identity provider's person never becomes an existing operator", async () => {
  const base = 'http://127.0.251.1:1';
  const idp = await startOidcProvider(`${base}/api/auth/oidc/callback`);
  const o = await startTestApp(
    {
      SVC_PUBLIC_URL: base,
      SVC_OIDC_ISSUER: idp.issuer,
      SVC_OIDC_CLIENT_ID: idp.clientId,
      SVC_OIDC_CLIENT_SECRET: idp.clientSecret,
      SVC_OIDC_ROLE_MAP: JSON.stringify({ 'ops-admins': 'admin' }),
    },
    { url: base },
  );
  try {
    const ownerHere = await adminClient(o);
    const ownerId = (await ownerHere.req('GET', '/api/auth/me')).body.user.id;
    idp.accounts.set('mallory', {
      preferred_username: ADMIN.username.toUpperCase(),
      // An address the provider never verified (it says nothing about it), and the owner's name.
      email: `${ADMIN.username}@example.org`,
      groups: 'ops-admins',
    });
    const jar = new CookieJar();
    const hops = await signInOverHttp(jar, `${base}/api/auth/oidc/start`, 'mallory');
    assert.equal(hops[hops.length - 1]!.status, 302);
    const c = new Client(base);
    for (const [k, v] of jar.entries(base)) c.cookies.set(k, v);
    const me = await c.req('GET', '/api/auth/me');
    assert.equal(me.status, 200, me.text);
    assert.notEqual(me.body.user.id, ownerId, 'signed in as the owner');
    assert.notEqual(me.body.user.username.toLowerCase(), ADMIN.username);
    assert.equal(me.body.user.role, 'admin');
  } finally {
    await o.stop();
    await idp.stop();
  }
});
