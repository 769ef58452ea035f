// POST /api/instance/restart on the real `svc serve`: step-up required, 202, the process drains
// and exits, a re-executed one answers on the same port, and the old session and token still work.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, rm, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { serve } from '../_support/cli.js';
import { freePort } from '../_support/net.js';
import { poll } from '../_support/wait.js';
import { Client, ADMIN, TEST_MASTER_KEY } from '../_support/server.js';

const cleanup: Array<() => Promise<void> | void> = [];
after(async () => {
  for (const fn of cleanup.reverse()) await fn();
});

test('restart: 202 after a step-up, same port answers again, old session and token still work', async () => {
  const dataDir = await mkdtemp(join(tmpdir(), 'svc-restart-'));
  cleanup.push(() => rm(dataDir, { recursive: true, force: true }));
  const port = await freePort();
  const s = await serve({
    SVC_DATA_DIR: dataDir,
    SVC_PORT: String(port),
    SVC_MASTER_KEY: TEST_MASTER_KEY,
    SVC_PASSWORD_COST: '12',
    SVC_AUTH_RATE_LIMIT: '1000',
    SVC_PROXY: 'off',
    SVC_SECURITY_MONITOR: 'false',
    SVC_ACCESS_LOG: join(dataDir, 'access.log'),
    SVC_SECURITY_DIR: join(dataDir, 'security'),
    SVC_RESTART_MODE: 'reexec',
  });
  cleanup.push(() => void s.stop());
  const base = `http://127.0.0.1:${port}`;
  const c = new Client(base);
  const token = (await readFile(join(dataDir, 'setup.token'), 'utf8')).trim();
  assert.equal((await c.req('POST', '/api/setup/admin', { token, ...ADMIN })).status, 201);
  assert.equal((await c.req('POST', '/api/auth/login', ADMIN)).status, 200);

  const refused = await c.req('POST', '/api/instance/restart');
  assert.equal(refused.status, 403);
  assert.equal(refused.body.code, 'step_up_required');
  assert.equal((await c.req('POST', '/api/auth/step-up', { password: ADMIN.password })).status, 200);
  const tok = await c.req('POST', '/api/auth/api-tokens', { name: 'before-restart' });
  assert.equal(tok.status, 201);

  const r = await c.req('POST', '/api/instance/restart');
  assert.equal(r.status, 202, r.text);
  assert.equal(await s.exited, 0, 'the old process drained and exited');
  // The new process logs to the same pipe: its listening line carries its pid, for the cleanup.
  const next = await poll(
    'the re-executed process to listen',
    () => s.lines.filter((l) => typeof l.msg === 'string' && l.msg.startsWith('listening'))[1],
    60_000,
    50,
  );
  assert.equal(next.port, port);
  assert.notEqual(next.pid, s.proc.pid);
  cleanup.push(() => {
    try {
      process.kill(next.pid, 'SIGTERM');
    } catch {
      // already gone
    }
  });
  const health = await poll(
    'health on the same port',
    async () => (await fetch(`${base}/api/health`)).status === 200,
    60_000,
    100,
  );
  assert.ok(health);
  assert.equal((await c.req('GET', '/api/auth/me')).status, 200, 'the session survives');
  const byToken = new Client(base);
  byToken.bearer = tok.body.token;
  assert.equal((await byToken.req('GET', '/api/auth/me')).status, 200, 'the token survives');
});
