// A build never reads what the host serves on its own addresses. Played as an attacker who writes
// the repository: its Dockerfile asks the engine (which fetches ADD's URLs itself, in the host's
// network) for a secret served on loopback, directly, through a compose service's custom
// Dockerfile, or through the ONBUILD trigger of a base image. Over HTTP against the real server,
// engine and git remote; a loopback HTTP server stands in for Caddy's admin API and counts requests.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needDocker, dockerReachable, BASE_IMAGE } from '../_support/docker.js';
import type { Client, TestServer } from '../_support/server.js';
import { listAppContainers } from '#lib/docker/index.js';
import { startDeployServer, waitStatus, cleanupApp, callInApp, type GitServer } from './_deploy.js';

const SECRET = `secret-${randomBytes(8).toString('hex')}`;
let s: TestServer;
let admin: Client;
let git: GitServer;
let hostService: Server;
let port = 0;
const requests: string[] = [];
const apps = new Set<string>();
const images: string[] = [];
let ready = false;

before(async () => {
  if (!(await dockerReachable())) return;
  hostService = createServer((req, res) => {
    requests.push(req.url ?? '');
    res.end(SECRET);
  });
  await new Promise<void>((resolve) => hostService.listen(0, '127.0.0.1', resolve));
  port = (hostService.address() as { port: number }).port;
  ({ git, s, admin } = await startDeployServer());
  ready = true;
});

after(async () => {
  if (!ready) return;
  for (const a of apps) await cleanupApp(s.env.engine, a);
  for (const i of images)
    await s.env.engine.docker
      .getImage(i)
      .remove({ force: true })
      .catch(() => {});
  await s.stop();
  await git.stop();
  await new Promise((resolve) => hostService.close(resolve));
});

const uniq = () => randomBytes(4).toString('hex');
const SERVE = `CMD ["sh", "-c", "trap 'exit 0' TERM; httpd -f -p 8080 -h /www & wait"]`;

async function gitApp(files: Record<string, string>): Promise<{ id: string; name: string }> {
  const repo = `leak-${uniq()}`;
  await git.commit(repo, files);
  const name = `leak-${uniq()}`;
  apps.add(name);
  const r = await admin.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git.url(repo), branch: 'main' },
  });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

/** Deploys; the deployment once it is final, with its log. */
async function deployed(app: { id: string; name: string }): Promise<{ dep: any; log: string }> {
  const r = await admin.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  const dep = await waitStatus(admin, app.id, r.body.deployment.id, ['failed', 'succeeded']);
  if (dep.status === 'succeeded') {
    // Without the policy: show what the container serves (the secret), then fail.
    const served = await callInApp(s.env.engine, app.name, 'http://app:8080/');
    assert.fail(
      `the build was not refused; the container serves ${JSON.stringify(served)}, the host service saw ${JSON.stringify(requests)}`,
    );
  }
  const logs = await admin.req('GET', `/api/apps/${app.id}/deployments/${dep.id}/logs`);
  return { dep, log: (logs.body.items as { line: string }[]).map((l) => l.line).join('\n') };
}

async function nothingBuilt(app: { name: string }, depId: string): Promise<void> {
  assert.deepEqual(
    await s.env.engine.docker.listImages({ filters: { label: [`svc.deployment=${depId}`] } }),
    [],
  );
  assert.deepEqual(await listAppContainers(s.env.engine, app.name), []);
  assert.deepEqual(requests, [], 'the host service saw no request');
}

test("a Dockerfile's ADD of a loopback URL fails the deployment naming the line; the host service is never asked", async (t) => {
  if (!(await needDocker(t))) return;
  const app = await gitApp({
    Dockerfile:
      [
        `FROM ${BASE_IMAGE}`,
        'RUN mkdir -p /www',
        `ADD http://127.0.0.1:${port}/secret /www/index.html`,
        'EXPOSE 8080',
        SERVE,
      ].join('\n') + '\n',
  });
  const { dep, log } = await deployed(app);
  assert.equal(dep.status, 'failed');
  assert.match(
    dep.error,
    new RegExp(
      `^the build is refused: Dockerfile:3: ADD from a URL is not allowed \\("http://127\\.0\\.0\\.1:${port}/secret"\\)`,
    ),
  );
  assert.ok(log.includes(dep.error), log);
  assert.ok(!log.includes(SECRET) && !dep.error.includes(SECRET));
  await nothingBuilt(app, dep.id);
});

test('a compose service with a custom dockerfile: its URL made of a build arg is resolved and refused, and the other service is not built either', async (t) => {
  if (!(await needDocker(t))) return;
  const app = await gitApp({
    'compose.yaml': [
      'services:',
      '  web:',
      '    build: ./web',
      '  app:',
      '    build:',
      '      context: ./api',
      '      dockerfile: docker/App.dockerfile',
      '      args:',
      `        HOST: "127.0.0.1:${port}"`,
    ].join('\n'),
    'web/Dockerfile': `FROM ${BASE_IMAGE}\nCMD ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]\n`,
    // The build arg the product passes decides the URL: resolved as the builder would, then refused.
    'api/docker/App.dockerfile':
      [
        'FROM scratch AS fetch',
        'ARG HOST=example.com',
        'ADD \\',
        '  http://${HOST}/secret /index.html',
        `FROM ${BASE_IMAGE}`,
        'COPY --from=fetch /index.html /www/index.html',
        SERVE,
      ].join('\n') + '\n',
  });
  const { dep, log } = await deployed(app);
  assert.match(
    dep.error,
    /^the build is refused: api\/docker\/App\.dockerfile:3: ADD from a URL is not allowed \("http:\/\/\$\{HOST\}\/secret"\)/,
  );
  assert.ok(log.includes(dep.error));
  await nothingBuilt(app, dep.id);
});

test("a base image's ONBUILD trigger that fetches a loopback URL is refused before the build runs it", async (t) => {
  if (!(await needDocker(t))) return;
  // The attacker's published image, here built straight on the engine (it is not an app's build).
  const base = `svc-test/onbuild-${uniq()}:latest`;
  images.push(base);
  const dir = await mkdtemp(join(tmpdir(), 'svc-onbuild-'));
  try {
    await writeFile(
      join(dir, 'Dockerfile'),
      `FROM ${BASE_IMAGE}\nRUN mkdir -p /www\nONBUILD ADD http://127.0.0.1:${port}/secret /www/index.html\n`,
    );
    const stream = await s.env.engine.docker.buildImage({ context: dir, src: ['Dockerfile'] }, { t: base });
    await new Promise<void>((resolve, reject) =>
      s.env.engine.docker.modem.followProgress(stream, (err) => (err ? reject(err) : resolve())),
    );
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  const app = await gitApp({ Dockerfile: `FROM ${base}\nEXPOSE 8080\n${SERVE}\n` });
  const { dep } = await deployed(app);
  assert.match(
    dep.error,
    new RegExp(
      `^the build is refused: Dockerfile:1: base image ${base.replace(/[/.]/g, '\\$&')}: ONBUILD ADD http://127\\.0\\.0\\.1:${port}/secret /www/index\\.html: ADD from a URL is not allowed`,
    ),
  );
  await nothingBuilt(app, dep.id);
});
