// The Security posture over the real server and the real engine: a container publishing a host
// port gets its own row. The other Security endpoints are tested in-process: tests/api/security/.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { startTestServer, adminClient, type TestServer, type Client } from '../_support/server.js';
import { needDocker, ensureBaseImage, BASE_IMAGE } from '../_support/docker.js';

const run = promisify(execFile);
const servers: TestServer[] = [];
after(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

async function boot(vars: Record<string, string> = {}): Promise<{ s: TestServer; c: Client }> {
  const s = await startTestServer(vars);
  servers.push(s);
  return { s, c: await adminClient(s) };
}

test('a service publishing a host port gets its own warning row naming app and service', async (t) => {
  if (!(await needDocker(t))) return;
  await ensureBaseImage();
  const { c } = await boot();
  const name = `svc-posture-${process.pid}`;
  await run('docker', [
    'run',
    '-d',
    '--name',
    name,
    '--label',
    'svc.app=posture-app',
    '--label',
    'svc.service=web',
    '-p',
    '0.0.0.0::8080',
    BASE_IMAGE,
    'sleep',
    '300',
  ]);
  try {
    const items = (await c.req('GET', '/api/security/posture')).body.items;
    const hp = items.filter((i: { code: string }) => i.code === 'host_ports');
    const mine = hp.find(
      (i: { app?: string; service?: string }) => i.app === 'posture-app' && i.service === 'web',
    );
    assert.ok(mine, JSON.stringify(hp));
    assert.equal(mine.status, 'warning');
  } finally {
    await run('docker', ['rm', '-f', name]);
  }
});
