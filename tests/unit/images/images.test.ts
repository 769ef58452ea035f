// The pure parts of the image path: references taken apart as the engine reads them, registry host
// rules (Docker Hub's aliases), pull progress reduced to one line per layer and state, pull
// failures worded without the password, the pull policy, and the self-hosted guard's verdicts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { digestReference, parseReference, repoDigestOf } from '#lib/docker/reference.js';
import { progressReporter, pullFailure } from '#lib/docker/pull.js';
import { canonicalHost, registryOfReference, ruleFor } from '#lib/registries/hosts/index.js';
import { parseChallenge } from '#lib/registries/login.js';
import { hostPort, registryPolicy } from '#lib/registries/policy.js';
import { pullPolicyOf } from '#lib/images/deploy.js';
import { selfHostedRefusal } from '#lib/net/self-hosted.js';

const D = `sha256:${'a'.repeat(64)}`;

test('references: the registry is the first part only when it looks like a host; Docker Hub otherwise', () => {
  assert.deepEqual(parseReference('nginx:1.27'), {
    registry: 'docker.io',
    path: 'library/nginx',
    tag: '1.27',
    digest: null,
  });
  assert.deepEqual(parseReference('team/app'), {
    registry: 'docker.io',
    path: 'team/app',
    tag: null,
    digest: null,
  });
  assert.deepEqual(parseReference('registry.example:5000/team/app:1.4'), {
    registry: 'registry.example:5000',
    path: 'team/app',
    tag: '1.4',
    digest: null,
  });
  assert.deepEqual(parseReference(`localhost/app@${D}`), {
    registry: 'localhost',
    path: 'app',
    tag: null,
    digest: D,
  });
  assert.equal(parseReference('127.0.0.1:5000/a/b:c').registry, '127.0.0.1:5000');
  assert.equal(digestReference('nginx:1.27', D), `nginx@${D}`);
  assert.equal(digestReference('docker.io/library/nginx:1.27', D), `nginx@${D}`);
  assert.equal(digestReference('127.0.0.1:5000/team/web:stable', D), `127.0.0.1:5000/team/web@${D}`);
  assert.equal(repoDigestOf('nginx:1.27', [`other@sha256:${'b'.repeat(64)}`, `nginx@${D}`]), D);
  assert.equal(repoDigestOf('127.0.0.1:5000/team/web:2', [`127.0.0.1:5000/team/other@${D}`]), null);
  assert.equal(repoDigestOf('svc/app-web:01abc', []), null);
});

test("registry hosts: Docker Hub's four names are docker.io; others keep host and port", () => {
  for (const h of ['docker.io', 'index.docker.io', 'registry-1.docker.io', 'Registry.Hub.Docker.com'])
    assert.equal(canonicalHost(h), 'docker.io', h);
  assert.equal(ruleFor('index.docker.io').serverAddress('index.docker.io'), 'https://index.docker.io/v1/');
  assert.equal(ruleFor('docker.io').apiHost('docker.io'), 'registry-1.docker.io');
  assert.equal(canonicalHost('Registry.Example:5000'), 'registry.example:5000');
  assert.equal(registryOfReference('nginx'), 'docker.io');
  assert.equal(registryOfReference('index.docker.io/library/nginx:1'), 'docker.io');
  assert.equal(registryOfReference('ghcr.io/team/app:1'), 'ghcr.io');
  assert.deepEqual(hostPort('registry.example'), { name: 'registry.example', port: 443 });
  assert.deepEqual(hostPort('127.0.0.1:5000'), { name: '127.0.0.1', port: 5000 });
});

test('pull progress: one line per layer and state change, never per byte', () => {
  const lines: string[] = [];
  const report = progressReporter((l) => lines.push(l));
  report({ status: 'Pulling from team/web', id: 'stable' });
  report({ status: 'Pulling fs layer', id: 'abc' });
  report({ status: 'Already exists', id: 'def' });
  for (let i = 1; i <= 50; i++)
    report({
      status: 'Downloading',
      id: 'abc',
      progressDetail: { current: i * 1000, total: 50 * 1024 * 1024 },
    });
  report({ status: 'Download complete', id: 'abc' });
  for (let i = 1; i <= 20; i++)
    report({ status: 'Extracting', id: 'abc', progressDetail: { current: i, total: 20 } });
  report({ status: 'Pull complete', id: 'abc' });
  report({ status: `Digest: ${D}` });
  report({ status: 'Status: Downloaded newer image for team/web:stable' });
  report({ error: 'boom', errorDetail: { message: 'boom' } });
  assert.deepEqual(lines, [
    'Pulling from team/web (stable)',
    'layer abc: Pulling fs layer',
    'layer def: Already exists',
    'layer abc: Downloading (50.0 MB)',
    'layer abc: Download complete',
    'layer abc: Extracting (0.0 MB)',
    'layer abc: Pull complete',
    `Digest: ${D}`,
    'Status: Downloaded newer image for team/web:stable',
  ]);
});

test('pull failures name the registry and what went wrong, never the password', () => {
  const login = {
    id: 'r1',
    host: 'reg.example:5000',
    serverAddress: 'reg.example:5000',
    username: 'ci',
    password: 's3cret-pw',
  };
  const refused = pullFailure(
    Object.assign(
      new Error('(HTTP code 500) server error - unauthorized: authentication required s3cret-pw'),
      { statusCode: 500 },
    ),
    'reg.example:5000/team/app:1',
    'reg.example:5000',
    login,
  );
  assert.equal(refused.kind, 'auth');
  assert.match(
    refused.message,
    /^registry reg\.example:5000: authentication failed: the stored credentials \(user ci\) were refused/,
  );
  assert.equal(refused.message.includes('s3cret-pw'), false);
  const anonymous = pullFailure(
    new Error('Head "http://reg/v2/x/manifests/1": no basic auth credentials'),
    'reg/x:1',
    'reg',
    null,
  );
  assert.equal(anonymous.kind, 'auth');
  assert.match(anonymous.message, /no credentials are stored for this registry/);
  const missing = pullFailure(
    Object.assign(new Error('(HTTP code 404) unexpected - manifest for r/x:9 not found: manifest unknown'), {
      statusCode: 404,
    }),
    'r/x:9',
    'r',
    null,
  );
  assert.equal(missing.kind, 'not_found');
  const down = pullFailure(
    new Error('Get "https://r:5000/v2/": dial tcp 10.0.0.9:5000: connect: connection refused'),
    'r:5000/x',
    'r:5000',
    null,
  );
  assert.equal(down.kind, 'unreachable');
});

test('the pull policy: pull: true always pulls; otherwise source.pull, default if_missing', () => {
  assert.equal(pullPolicyOf({}, false), 'if_missing');
  assert.equal(pullPolicyOf({ pull: 'always' }, false), 'always');
  assert.equal(pullPolicyOf({ pull: 'if_missing' }, true), 'always');
});

test('the test call reads both challenges registries send', () => {
  assert.deepEqual(parseChallenge('Basic realm="svc-test"'), { scheme: 'basic' });
  assert.deepEqual(parseChallenge('Bearer realm="https://auth.example/token",service="registry.example"'), {
    scheme: 'bearer',
    realm: 'https://auth.example/token',
    service: 'registry.example',
  });
  assert.equal(parseChallenge('Bearer service="x"'), null);
  assert.equal(parseChallenge(undefined), null);
});

test('the self-hosted guard: private and loopback allowed, link-local and the control plane refused', () => {
  const policy = registryPolicy({ port: 9393, proxy: { adminUrl: 'http://127.0.0.1:2019' } } as never);
  assert.deepEqual([...policy.controlPorts].sort(), [2019, 9393]);
  assert.equal(selfHostedRefusal('127.0.0.1', 5000, policy), null);
  assert.equal(selfHostedRefusal('10.0.0.5', 443, policy), null);
  assert.equal(selfHostedRefusal('192.168.1.10', 9393, policy), null);
  assert.equal(selfHostedRefusal('8.8.8.8', 443, policy), null);
  assert.match(selfHostedRefusal('203.0.113.7', 443, policy)!, /reserved/);
  assert.match(selfHostedRefusal('169.254.169.254', 80, policy)!, /link-local/);
  assert.match(selfHostedRefusal('::ffff:169.254.169.254', 80, policy)!, /link-local|embeds/);
  assert.match(selfHostedRefusal('fe80::1', 5000, policy)!, /link-local/);
  assert.match(selfHostedRefusal('224.0.0.1', 5000, policy)!, /multicast/);
  assert.match(selfHostedRefusal('127.0.0.1', 9393, policy)!, /control plane's own endpoint/);
  assert.match(selfHostedRefusal('127.0.0.2', 2019, policy)!, /control plane's own endpoint/);
  assert.match(selfHostedRefusal('0.0.0.0', 2019, policy)!, /unspecified|control plane/);
  const socket = registryPolicy({ port: 9393, proxy: { adminUrl: 'unix//run/caddy/admin.sock' } } as never);
  assert.deepEqual(socket.controlPorts, [9393]);
});
