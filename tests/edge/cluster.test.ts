// The edge container's specification in cluster mode, as a pure function of the configuration.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { loadConfig } from '#lib/config.js';
import { edgeContainerSpec, EdgeSetupError, EDGE_VOLUME, LABEL_EDGE_SPEC } from '#lib/proxy/cluster.js';

const base = {
  SVC_DATA_DIR: '/tmp/svc-edge-spec',
  SVC_MASTER_KEY: 'a'.repeat(64),
  SVC_CLUSTER: 'swarm',
  SVC_ACCESS_LOG: '/var/log/caddy/access.log',
};
const spec = (env: Record<string, string>) =>
  edgeContainerSpec(loadConfig({ ...base, ...env }), { owner: 'x' });

test('the admin endpoint is published on its own address only, and Caddy accepts that origin', () => {
  const s = spec({ SVC_CADDY_ADMIN: 'http://10.1.2.3:2999', SVC_IMAGE_MAP: '{"caddy:2":"mirror/caddy:2"}' });
  const c = s.create as any;
  assert.equal(c.Image, 'mirror/caddy:2');
  assert.deepEqual(c.HostConfig.PortBindings['2019/tcp'], [{ HostIp: '10.1.2.3', HostPort: '2999' }]);
  assert.deepEqual(c.HostConfig.PortBindings['80/tcp'], [{ HostPort: '80' }]);
  assert.deepEqual(c.HostConfig.PortBindings['443/tcp'], [{ HostPort: '443' }]);
  assert.deepEqual(s.initialConfig, { admin: { listen: '0.0.0.0:2019', origins: ['10.1.2.3:2999'] } });
  assert.deepEqual(c.HostConfig.Mounts, [{ Type: 'volume', Source: EDGE_VOLUME, Target: '/data' }]);
  assert.deepEqual(c.HostConfig.Binds, ['/var/log/caddy:/var/log/caddy']);
  assert.equal(c.HostConfig.RestartPolicy.Name, 'unless-stopped');
  assert.equal(c.Labels.owner, 'x');
  assert.equal(c.Labels['svc.role'], 'edge');
  assert.equal(c.Labels[LABEL_EDGE_SPEC], s.hash);
  // The official image when nothing maps it; loopback for localhost.
  const d = spec({ SVC_CADDY_ADMIN: 'http://localhost:2019' });
  assert.equal((d.create as any).Image, 'caddy:2');
  assert.equal(d.admin.host, '127.0.0.1');
});

test('a changed port or admin address changes the digest that re-creates the container', () => {
  const a = spec({ SVC_CADDY_ADMIN: 'http://10.1.2.3:2019' });
  assert.equal(spec({ SVC_CADDY_ADMIN: 'http://10.1.2.3:2019' }).hash, a.hash);
  assert.notEqual(spec({ SVC_CADDY_ADMIN: 'http://10.1.2.4:2019' }).hash, a.hash);
  assert.notEqual(
    spec({ SVC_CADDY_ADMIN: 'http://10.1.2.3:2019', SVC_PROXY_HTTP_PORT: '8080' }).hash,
    a.hash,
  );
});

test('a wildcard or unix-socket admin endpoint is refused in cluster mode', () => {
  assert.throws(() => spec({ SVC_CADDY_ADMIN: 'http://0.0.0.0:2019' }), EdgeSetupError);
  assert.throws(() => spec({ SVC_CADDY_ADMIN: 'http://[::]:2019' }), EdgeSetupError);
  assert.throws(() => spec({ SVC_CADDY_ADMIN: 'unix//run/caddy/admin.sock' }), EdgeSetupError);
});
