// Caddy's admin endpoint on a unix socket (SVC_CADDY_ADMIN=unix//<path>), against a real Caddy: a
// socket in a folder only the control plane may open keeps other local processes, and anything that
// fetches loopback URLs for a tenant, away from a config that holds uploaded private keys.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig, ConfigError } from '#lib/config.js';
import { createCaddyClient } from '#lib/proxy/caddy.js';
import { instanceInfo } from '#lib/instance/info.js';
import { labEnv, labPerFile } from '../_support/edge.js';
import { poll } from '../_support/wait.js';

const { theLab } = labPerFile({ adminSocket: true });

const base = { SVC_DATA_DIR: '/tmp/svc-unused', SVC_MASTER_KEY: 'c'.repeat(64), SVC_LOG_LEVEL: 'silent' };

test('SVC_CADDY_ADMIN takes unix//<absolute path> (Caddy syntax); anything else that is not an http origin is refused', () => {
  assert.equal(
    loadConfig({ ...base, SVC_CADDY_ADMIN: 'unix//run/caddy/admin.sock' }).proxy.adminUrl,
    'unix//run/caddy/admin.sock',
  );
  for (const bad of [
    'unix/run/caddy.sock',
    'unix///run//x.sock',
    'unix//run/../etc/x',
    'unix//run/caddy.sock|0600',
    'unix:/run/caddy.sock',
  ]) {
    assert.throws(() => loadConfig({ ...base, SVC_CADDY_ADMIN: bad }), ConfigError, bad);
  }
});

test('the admin client reads and loads Caddy over a unix socket, and the admin endpoint stays there across loads', async (t) => {
  const lab = await theLab(t);
  if (!lab) return;
  assert.match(lab.adminUrl, /^unix\/\/.*\/admin\.sock$/);
  const client = createCaddyClient(lab.adminUrl);
  assert.equal(client.listen, lab.adminUrl);
  assert.equal(await client.reachable(), true);
  assert.deepEqual(await client.getConfig(), { admin: { listen: lab.adminUrl } });
  const body = 'served after a load over the socket';
  await client.load({
    admin: { listen: client.listen },
    apps: {
      http: {
        servers: {
          s: { listen: [`:${lab.httpPort}`], routes: [{ handle: [{ handler: 'static_response', body }] }] },
        },
      },
    },
  });
  assert.equal((await lab.http('socket.test')).body, body);
  // Caddy restarts its admin server on a load: the next call finds it on the socket again.
  assert.equal(((await client.getConfig()) as { admin: { listen: string } }).admin.listen, lab.adminUrl);
});

test('a control plane pointed at the socket syncs its config there and reports the proxy reachable', async (t) => {
  const lab = await theLab(t);
  if (!lab) return;
  const env = await labEnv(t, lab);
  const synced = await poll(
    "the control plane's config in Caddy",
    async () => {
      const c = (await lab.admin('/config/')) as {
        admin?: { listen?: string };
        apps?: { http?: { servers?: Record<string, unknown> } };
      };
      return c.apps?.http?.servers && Object.keys(c.apps.http.servers).length ? c : null;
    },
    30_000,
    100,
  );
  assert.equal(synced.admin?.listen, lab.adminUrl);
  assert.deepEqual((await instanceInfo(env)).proxy, { reachable: true, version: null });
});
