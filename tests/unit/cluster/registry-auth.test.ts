// The cluster registry's account goes to Swarm only with services whose image is in that registry
// (lib/cluster/rollout.ts): an image from elsewhere is pulled without it, since the engine would
// present it to that other registry.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { authFor, updateService } from '#lib/cluster/rollout.js';
import { createEngine } from '#lib/docker/engine.js';

test('the account goes with the cluster registry images only', () => {
  const auth = { username: 'svc', password: 'p', serveraddress: '10.0.0.11:5000' };
  assert.equal(authFor(`10.0.0.11:5000/library/app@sha256:${'a'.repeat(64)}`, auth), auth);
  for (const other of [
    'nginx:1.27',
    'registry.example/team/app:1',
    '10.0.0.11:5000evil/x:1',
    '10.0.0.11/x:1',
  ])
    assert.deepEqual(authFor(other, auth), {}, other);
  assert.deepEqual(authFor('10.0.0.11:5000/x:1', {}), {}, 'an operator registry: nothing');
  assert.deepEqual(authFor('10.0.0.11:5000/x:1', undefined), {});
});

// What the engine is asked: a scale, a restart or a placement change (lib/cluster/services.ts)
// sends no X-Registry-Auth header, so the swarm keeps the credentials the deploy gave the service;
// any header, even an empty `{}`, would replace them and leave a node without the image unable to
// pull it (tests/cluster/e2e.test.ts proves that on a real swarm). An endpoint on a unix socket
// stands in for the engine here: only the request's headers and query are looked at.
test('a change that keeps the image sends no credentials; a deploy sends its own', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-update-auth-'));
  t.after(() => rmSync(dir, { recursive: true, force: true }));
  const engine = createEngine({ socketPath: join(dir, 'engine.sock') });
  const seen: Array<{ auth: string | undefined; url: string }> = [];
  const server = createServer((req, res) => {
    seen.push({ auth: req.headers['x-registry-auth'] as string | undefined, url: req.url ?? '' });
    req.resume();
    req.on('end', () => res.writeHead(200, { 'content-type': 'application/json' }).end('{}'));
  });
  await new Promise<void>((r) => server.listen(engine.socketPath, () => r()));
  t.after(() => server.close());
  const spec = { Name: 'svc-x-app' };
  await updateService(engine, 'id1', { version: 7 }, spec);
  await updateService(engine, 'id1', { version: 8, rollback: 'previous' }, spec);
  const account = { username: 'svc', password: 'p', serveraddress: '10.0.0.11:5000' };
  await updateService(engine, 'id1', { version: 9 }, spec, account);
  await updateService(engine, 'id1', { version: 10 }, spec, {});
  const query = (u: string) => Object.fromEntries(new URL(u, 'http://x').searchParams);
  assert.equal(seen[0]!.auth, undefined, 'a scale sends no header');
  assert.deepEqual(query(seen[0]!.url), { version: '7', registryAuthFrom: 'spec' });
  assert.equal(seen[1]!.auth, undefined, 'a rollback sends no header');
  assert.deepEqual(query(seen[1]!.url), {
    version: '8',
    rollback: 'previous',
    registryAuthFrom: 'previous-spec',
  });
  const sent = JSON.parse(Buffer.from(seen[2]!.auth!, 'base64url').toString('utf8'));
  assert.deepEqual(sent, account, 'a deploy to the cluster registry sends its account');
  assert.deepEqual(query(seen[2]!.url), { version: '9' });
  assert.equal(
    Buffer.from(seen[3]!.auth!, 'base64url').toString('utf8'),
    '{}',
    'an image from elsewhere: none',
  );
});
