// Repository URLs over HTTP: credentials and option-like ssh hosts are refused naming the field,
// never echoed; a row stored before the rule keeps its secret only on disk.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { adminClient, type Client } from '../../_support/server.js';
import { startTestApp, type TestApp } from '../../_support/request.js';
import { insertApp } from '#lib/apps/store.js';
import { poll } from '../../_support/wait.js';

let s: TestApp;
let admin: Client;

before(async () => {
  s = await startTestApp({}, { background: true });
  admin = await adminClient(s);
});
after(() => s.stop());

const uniq = () => randomBytes(3).toString('hex');
const SECRET = 'ghp_Zx81secretTOKENvalue';

const REFUSED: [string, RegExp][] = [
  [`https://${SECRET}@github.example/org/repo.git`, /credentials/],
  [`https://deploy:${SECRET}@forge.example/org/repo.git`, /credentials/],
  [`http://oauth2:${SECRET}@10.0.0.7:3000/me/app.git`, /credentials/],
  [`ssh://git:${SECRET}@forge.example/org/repo.git`, /credentials/],
  [`git://${SECRET}@forge.example/repo`, /credentials/],
  ['ssh://%2DoProxyCommand=touch%20%2Ftmp%2Fx/repo.git', /percent-encoded|starts with "-"/],
  ['ssh://git@%2DoProxyCommand=x/repo.git', /percent-encoded|starts with "-"/],
];

function assertRefused(r: { status: number; body: any; text: string }, url: string, reason: RegExp) {
  assert.equal(r.status, 400, `${url}: ${r.text}`);
  assert.equal(r.body.code, 'bad_request');
  assert.equal(r.body.details[0].field, 'source.repo_url', r.text);
  assert.match(r.body.details[0].message, reason);
  assert.ok(!r.text.includes(SECRET), `the answer repeats the secret: ${r.text}`);
}

test('create, update and import refuse credentials and option-like hosts in repo_url with 400 naming source.repo_url', async () => {
  const ok = await admin.req('POST', '/api/apps', {
    name: `url-${uniq()}`,
    source: { type: 'git', repo_url: 'git@forge.example:team/app.git', branch: 'main' },
  });
  assert.equal(ok.status, 201, ok.text);
  const ssh = await admin.req('POST', '/api/apps', {
    name: `url-${uniq()}`,
    source: { type: 'git', repo_url: 'ssh://git@forge.example:2222/team/app.git', branch: 'main' },
  });
  assert.equal(ssh.status, 201, ssh.text);
  for (const [url, reason] of REFUSED) {
    assertRefused(
      await admin.req('POST', '/api/apps', {
        name: `url-${uniq()}`,
        source: { type: 'git', repo_url: url, branch: 'main' },
      }),
      url,
      reason,
    );
    assertRefused(
      await admin.req('PATCH', `/api/apps/${ok.body.app.id}`, {
        source: { type: 'git', repo_url: url, branch: 'main' },
      }),
      url,
      reason,
    );
    assertRefused(
      await admin.req('POST', '/api/apps/import', {
        version: 1,
        name: `url-${uniq()}`,
        source: { type: 'git', repo_url: url, branch: 'main' },
      }),
      url,
      reason,
    );
  }
  const list = await admin.req('GET', '/api/apps');
  assert.ok(!list.text.includes(SECRET) && !list.text.includes('ProxyCommand'), 'nothing refused was stored');
  const got = await admin.req('GET', `/api/apps/${ok.body.app.id}`);
  assert.equal(
    got.body.app.source.repo_url,
    'git@forge.example:team/app.git',
    'a refused PATCH changed nothing',
  );
});

test('a URL with a token stored before the rule never leaves in clear: views, export, deployment log and error', async () => {
  const legacy = await insertApp(s.env.db, `legacy-${uniq()}`, {
    type: 'git',
    repo_url: `https://x-access:${SECRET}@forge.example/org/repo.git`,
    branch: 'main',
  });
  const got = await admin.req('GET', `/api/apps/${legacy.id}`);
  assert.equal(got.status, 200);
  assert.equal(got.body.app.source.repo_url, 'https://***@forge.example/org/repo.git');
  const list = await admin.req('GET', '/api/apps');
  const exp = await admin.req('GET', `/api/apps/${legacy.id}/export`);
  assert.equal(exp.status, 200, exp.text);
  assert.equal(exp.body.source.repo_url, 'https://***@forge.example/org/repo.git');
  const dep = await admin.req('POST', `/api/apps/${legacy.id}/deployments`, {});
  assert.equal(dep.status, 202, dep.text);
  const d = await poll(
    'the deployment to fail',
    async () => {
      const r = await admin.req('GET', `/api/apps/${legacy.id}/deployments/${dep.body.deployment.id}`);
      return r.body.deployment.status === 'failed' ? r.body.deployment : null;
    },
    120_000,
    200,
  );
  assert.match(d.error, /credentials in the URL are refused/);
  const logs = await admin.req('GET', `/api/apps/${legacy.id}/deployments/${d.id}/logs`);
  assert.match(logs.text, /https:\/\/\*\*\*@forge\.example/);
  const audit = await admin.req('GET', '/api/audit');
  for (const text of [got.text, list.text, exp.text, JSON.stringify(d), logs.text, audit.text])
    assert.ok(!text.includes(SECRET), text);
});
