// Container-to-host escapes, played as an attacker who controls an app's repository (and so its
// compose file and what its containers do), over HTTP against the real engine and a real git
// server. Each attack here worked on the code before the fix.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, readFile, readdir, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { needDocker, dockerReachable, BASE_IMAGE, DOCKER_SOCKET } from '../_support/docker.js';
import type { Client, TestServer } from '../_support/server.js';
import { listAppContainers } from '#lib/docker/index.js';
import { execIn, until } from './_helpers.js';
import { startDeployServer, waitStatus, cleanupApp, type GitServer } from './_deploy.js';

let s: TestServer;
let admin: Client;
let git: GitServer;
let ready = false;
const apps = new Set<string>();
const hostFiles: string[] = [];

before(async () => {
  if (!(await dockerReachable())) return;
  ({ git, s, admin } = await startDeployServer());
  ready = true;
});

after(async () => {
  for (const f of hostFiles) await rm(f, { recursive: true, force: true });
  if (!ready) return;
  for (const a of apps) await cleanupApp(s.env.engine, a);
  await s.stop();
  await git.stop();
});

const uniq = () => randomBytes(4).toString('hex');
const KEEP_RUNNING = "trap 'exit 0' TERM; sleep 3600 & wait";

async function createApp(
  repo: string,
  extra: Record<string, unknown> = {},
): Promise<{ id: string; name: string }> {
  const name = `esc-${uniq()}`;
  apps.add(name);
  const r = await admin.req('POST', '/api/apps', {
    name,
    source: { type: 'git', repo_url: git.url(repo), branch: 'main', ...extra },
  });
  assert.equal(r.status, 201, r.text);
  return r.body.app;
}

async function deployOk(appId: string): Promise<any> {
  const r = await admin.req('POST', `/api/apps/${appId}/deployments`, {});
  assert.equal(r.status, 202, r.text);
  return waitStatus(admin, appId, r.body.deployment.id, ['succeeded']);
}

async function logText(appId: string, depId: string): Promise<string> {
  return (
    (await admin.req('GET', `/api/apps/${appId}/deployments/${depId}/logs`)).body.items as { line: string }[]
  )
    .map((l) => l.line)
    .join('\n');
}

async function running(app: string, service: string, deployment?: string): Promise<string> {
  return until(
    `${service} running`,
    async () =>
      (await listAppContainers(s.env.engine, app, { service, ...(deployment ? { deployment } : {}) })).find(
        (c) => c.state === 'running',
      )?.id,
  );
}

async function sh(id: string, script: string): Promise<string> {
  const r = await execIn(s.env.engine, id, ['sh', '-c', script]);
  return r.stdout.toString();
}

const exists = (p: string) =>
  stat(p).then(
    () => true,
    () => false,
  );

test('a container that writes git hooks, filters and config into its bind mounts never runs code on the host, and its writes never reach the working copy', async (t) => {
  if (!(await needDocker(t)) || !ready) return;
  const marker = join(tmpdir(), `svc-pwned-${uniq()}`);
  const markers = ['smudge', 'fsmonitor', 'hook', 'proxy', 'include', 'sshcmd'].map((k) => `${marker}-${k}`);
  hostFiles.push(...markers);
  // Everything an attacker can put into a .git directory to make the host's git run a command.
  const attack = [
    'for d in /app /src; do',
    'mkdir -p $d/.git/hooks $d/.git/info;',
    `printf '[core]\\n\\tfsmonitor = touch ${marker}-fsmonitor\\n\\tgitProxy = touch ${marker}-proxy\\n\\tsshCommand = touch ${marker}-sshcmd\\n\\thooksPath = .git/hooks\\n[filter "evil"]\\n\\tsmudge = touch ${marker}-smudge; cat\\n\\tclean = cat\\n[include]\\n\\tpath = extra\\n' >> $d/.git/config;`,
    `printf '[filter "evil2"]\\n\\tsmudge = touch ${marker}-include; cat\\n' > $d/.git/extra;`,
    "printf '* filter=evil\\n*.txt filter=evil2\\n' > $d/.git/info/attributes;",
    "printf '* filter=evil\\n' > $d/.gitattributes;",
    'for h in post-checkout post-merge pre-auto-gc reference-transaction fsmonitor-watchman; do',
    `printf '#!/bin/sh\\ntouch ${marker}-hook\\n' > $d/.git/hooks/$h; chmod +x $d/.git/hooks/$h;`,
    'done; touch $d/ATTACKED;',
    'done;',
    'cat /proc/sys/kernel/random/uuid > /data/id-$(cat /app/version);',
    KEEP_RUNNING,
  ].join(' ');
  const files = (v: string) => ({
    version: `${v}\n`,
    'conf/version': `${v}\n`,
    'notes.txt': `notes ${v}\n`,
    'data/.keep': '',
    'compose.yaml': [
      'services:',
      '  evil:',
      `    image: ${BASE_IMAGE}`,
      '    volumes: ["./:/app", ".:/src", "./data:/data", "./conf:/conf:ro"]',
      `    command: ["sh", "-c", ${JSON.stringify(attack.replace(/\$/g, '$$$$'))}]`,
      '',
    ].join('\n'),
  });
  const repo = `escape-${uniq()}`;
  await git.commit(repo, files('v1'));
  const app = await createApp(repo);
  const d1 = await deployOk(app.id);
  const c1 = await running(app.name, 'evil', d1.id);
  await until('the attack written', async () =>
    (await sh(c1, 'test -e /src/ATTACKED && test -e /app/ATTACKED && echo yes')).includes('yes'),
  );
  assert.equal(await sh(c1, 'cat /app/version /conf/version'), 'v1\nv1\n');
  const id1 = await sh(c1, 'cat /data/id-v1');
  assert.match(id1, /^[0-9a-f-]{36}\n$/);

  // A new commit touches every file, so a checkout into a tampered working copy would smudge them.
  await git.commit(repo, { ...files('v2'), 'extra.txt': 'new\n' });
  const r2 = await admin.req('POST', `/api/apps/${app.id}/deployments`, {});
  assert.equal(r2.status, 202, r2.text);
  const d2 = await waitStatus(admin, app.id, r2.body.deployment.id, ['succeeded', 'failed']).catch((e) => ({
    error: String(e),
  }));
  for (const m of markers)
    assert.equal(await exists(m), false, `${m} must not exist: the host ran a command the container wrote`);
  assert.equal(d2.status, 'succeeded', d2.error);
  const log2 = await logText(app.id, d2.id);
  assert.match(log2, /fetched into the working copy/, 'the working copy was never touched, so it was reused');
  const log1 = await logText(app.id, d1.id);
  assert.match(log1, /bind \. \(writable repository root\): a fresh copy/);
  assert.match(log1, /bind \.\/data \(writable folder\): the app's data, kept across deploys/);

  // Nothing the container wrote is in the working copy.
  const repoDir = join(s.dataDir, 'work', app.id, 'repo');
  const config = await readFile(join(repoDir, '.git', 'config'), 'utf8');
  assert.doesNotMatch(config, /evil|fsmonitor|gitProxy|include|sshCommand|hooksPath/);
  assert.equal(await exists(join(repoDir, 'ATTACKED')), false);
  assert.equal(await exists(join(repoDir, '.git', 'info', 'attributes')), false);
  assert.equal(await exists(join(repoDir, '.git', 'extra')), false);
  assert.deepEqual(
    (await readdir(join(repoDir, '.git', 'hooks')).catch(() => [])).filter((h) => !h.endsWith('.sample')),
    [],
  );
  assert.equal(await readFile(join(repoDir, 'version'), 'utf8'), 'v2\n');

  // What an operator expects: the source is fresh, the data is kept.
  const c2 = await running(app.name, 'evil', d2.id);
  assert.notEqual(c2, c1);
  assert.equal(await sh(c2, 'cat /app/version /conf/version /src/extra.txt'), 'v2\nv2\nnew\n');
  assert.equal(
    await sh(c2, 'cat /data/id-v1'),
    id1,
    'data written by the previous deployment is still there',
  );
  const src = join(s.dataDir, 'work', app.id, 'deployments', d2.id, 'src');
  assert.equal(await readFile(join(src, 'version'), 'utf8'), 'v2\n');
  assert.equal(await exists(join(src, '.git')), false, 'the read-only copy has no .git');
  for (const m of (await s.env.engine.docker.getContainer(c2).inspect()).Mounts) {
    if (m.Type === 'bind') assert.ok(!m.Source.startsWith(repoDir), `${m.Source} is not the working copy`);
  }
});

test('a symlink race on a bind source path never mounts / or the engine socket, over many restarts and a redeploy', async (t) => {
  if (!(await needDocker(t)) || !ready) return;
  // The attacker can write where it is mounted. Once told to, it replaces the folder that the
  // victim's binds sit in by a symlink, and flips it atomically, in a tight loop, between the
  // real files and a folder whose entries point at / and at the engine's socket. The engine
  // resolves a bind source each time it starts a container.
  const loop = [
    'until [ -e /w/GO ]; do usleep 100000; done;',
    'mkdir -p /w/real /w/evil; cp -a /w/sub/. /w/real/; ln -s / /w/evil/x; ln -s /var/run/docker.sock /w/evil/sock;',
    'rm -rf /w/sub; ln -s real /w/sub;',
    'while :; do ln -s evil /w/sub.t; mv -fT /w/sub.t /w/sub; usleep 3000; ln -s real /w/sub.t; mv -fT /w/sub.t /w/sub; usleep 1000; done',
  ].join(' ');
  const repo = `race-${uniq()}`;
  await git.commit(repo, {
    'sub/x/MARKER': 'legit\n',
    'sub/sock': 'a plain file\n',
    'compose.yaml': [
      'services:',
      '  attacker:',
      `    image: ${BASE_IMAGE}`,
      '    volumes: [".:/w"]',
      `    command: ["sh", "-c", ${JSON.stringify(`trap 'exit 0' TERM; ${loop} & wait`)}]`,
      '  victim:',
      `    image: ${BASE_IMAGE}`,
      '    volumes: ["./sub/x:/target:ro", "./sub/sock:/sock:ro"]',
      `    command: ["sh", "-c", ${JSON.stringify(KEEP_RUNNING)}]`,
      '',
    ].join('\n'),
  });
  const app = await createApp(repo);
  await deployOk(app.id);
  const attacker = await running(app.name, 'attacker');
  await sh(attacker, 'touch /w/GO');
  await until('the attacker loop running', async () =>
    /sub -> (evil|real)/.test(await sh(attacker, 'ls -la /w')),
  );
  const socketReal = DOCKER_SOCKET;
  const checked = new Set<string>();
  const check = async (round: number) => {
    const victim = await running(app.name, 'victim');
    const seen = await sh(
      victim,
      'ls -A /target; if [ -S /sock ]; then echo SOCKET; fi; if [ -e /target/proc ] || [ -e /target/etc ]; then echo HOSTROOT; fi',
    );
    assert.doesNotMatch(seen, /SOCKET|HOSTROOT/, `round ${round}: the victim sees the host: ${seen}`);
    assert.equal(seen, 'MARKER\n', `round ${round}`);
    const info = await s.env.engine.docker.getContainer(victim).inspect();
    for (const m of info.Mounts)
      assert.ok(
        m.Source !== '/' && m.Source !== socketReal && !m.Source.endsWith('docker.sock'),
        `round ${round}: ${m.Source}`,
      );
    checked.add(victim);
  };
  const ROUNDS = 40;
  for (let i = 0; i < ROUNDS; i++) {
    if (i === ROUNDS / 2) {
      const d = await deployOk(app.id);
      // The previous victim is retired after the switch: wait for it to go.
      await until('only the new victim', async () =>
        (await listAppContainers(s.env.engine, app.name, { service: 'victim' })).every(
          (c) => c.deployment === d.id,
        ),
      );
      await sh(await running(app.name, 'attacker', d.id), 'touch /w/GO');
    } else {
      const r = await admin.req('POST', `/api/apps/${app.id}/services/victim/restart`);
      assert.equal(r.status, 200, r.text);
    }
    await check(i);
  }
  assert.ok(checked.size >= 2, 'the redeploy created a new victim container, checked too');
  // The loop kept racing all along (and after the redeploy, in the new attacker).
  await until(
    'the previous attacker retired',
    async () => (await listAppContainers(s.env.engine, app.name, { service: 'attacker' })).length === 1,
  );
  const last = await running(app.name, 'attacker');
  await sh(last, 'touch /w/GO');
  await until('the attacker loop still running', async () => /sub -> evil/.test(await sh(last, 'ls -la /w')));
});

test('a compose file that is a symlink out of the repository is refused, never read', async (t) => {
  if (!(await needDocker(t)) || !ready) return;
  const secret = `leak-${uniq()}`;
  const hostDir = await mkdtemp(join(tmpdir(), 'svc-hostfile-'));
  hostFiles.push(hostDir);
  await writeFile(join(hostDir, 'compose.yaml'), `services:\n  ${secret}:\n    image: ${BASE_IMAGE}\n`);
  await writeFile(join(hostDir, 'passwd'), `root:x:0:0:${secret}:/root:/bin/sh\n`);

  // compose_path through a folder symlink, and a compose file that is itself a symlink.
  const viaDir = `link-dir-${uniq()}`;
  await mkdir(join(git.base, viaDir), { recursive: true });
  await symlink(hostDir, join(git.base, viaDir, 'deploy'));
  await git.commit(viaDir, { Dockerfile: `FROM ${BASE_IMAGE}\n` });
  const viaFile = `link-file-${uniq()}`;
  await mkdir(join(git.base, viaFile), { recursive: true });
  await symlink(join(hostDir, 'passwd'), join(git.base, viaFile, 'compose.yaml'));
  await git.commit(viaFile, { Dockerfile: `FROM ${BASE_IMAGE}\n` });

  for (const [repo, extra, name] of [
    [viaDir, { compose_path: 'deploy/compose.yaml' }, 'deploy/compose.yaml'],
    [viaFile, {}, 'compose.yaml'],
  ] as const) {
    const app = await createApp(repo, extra);
    const probe = await admin.req('POST', `/api/apps/${app.id}/detect-compose`);
    assert.equal(probe.status, 200, probe.text);
    assert.ok(!probe.text.includes(secret), `the probe must not read the host file: ${probe.text}`);
    assert.deepEqual(probe.body.services, []);
    assert.ok(
      probe.body.findings.some(
        (f: { level: string; message: string }) =>
          f.level === 'error' && f.message.includes(`compose file ${name} resolves outside the repository`),
      ),
      probe.text,
    );

    const r = await admin.req('POST', `/api/apps/${app.id}/deployments`, {});
    assert.equal(r.status, 202, r.text);
    const d = await waitStatus(admin, app.id, r.body.deployment.id, ['failed']);
    assert.match(d.error, /resolves outside the repository/);
    const all = JSON.stringify(d) + (await logText(app.id, d.id));
    assert.ok(!all.includes(secret), 'the host file never reaches the deployment or its log');
    assert.deepEqual(await listAppContainers(s.env.engine, app.name), []);
  }
});
