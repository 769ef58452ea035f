import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { loadConfig, ConfigError } from '#lib/config.js';

test('defaults follow the contract', () => {
  const c = loadConfig({});
  assert.equal(c.port, 9393);
  assert.equal(c.host, '0.0.0.0');
  assert.ok(c.dataDir.endsWith('/data'));
  assert.equal(c.masterKey, null);
  assert.deepEqual(c.trustedProxies, ['127.0.0.1', '::1']);
  assert.equal(c.exposure, 'local');
  assert.equal(c.security.monitor, true);
  assert.equal(c.security.agent, false);
  assert.equal(c.security.windowSeconds, 60);
  assert.equal(c.security.requestThreshold, 300);
  assert.equal(c.security.errorThreshold, 100);
  assert.equal(c.security.cooldownSeconds, 600);
  assert.equal(c.security.maxIps, 1024);
  assert.equal(c.shellMaxSeconds, 8 * 3600);
});

const bad: Array<[string, string]> = [
  ['SVC_PORT', 'eighty'],
  ['SVC_PORT', '70000'],
  ['SVC_MASTER_KEY', 'abc'],
  ['SVC_MASTER_KEY', 'z'.repeat(64)],
  ['SVC_TRUSTED_PROXIES', '10.0.0.0/99'],
  ['SVC_TRUSTED_PROXIES', 'proxy.local'],
  ['SVC_EXPOSURE', 'internet'],
  ['SVC_BASE_DOMAIN', 'not a domain'],
  ['SVC_ENABLE_SHELL', 'maybe'],
  ['SVC_SHELL_MAX', '0'],
  ['SVC_SHELL_MAX', '8h'],
  ['SVC_SECURITY_WINDOW', '0'],
  ['SVC_SECURITY_REQUEST_THRESHOLD', '-5'],
  ['SVC_SECURITY_ERROR_THRESHOLD', 'many'],
  ['SVC_SECURITY_COOLDOWN', '1.5'],
  ['SVC_SECURITY_MAX_IPS', '0'],
  ['SVC_SECURITY_ALLOWLIST', '1.2.3.4,nope'],
  ['SVC_HOST', 'my host'],
  ['SVC_METRICS_TOKEN', 'short'],
  ['SVC_PROXY', 'sometimes'],
  ['SVC_CADDY_ADMIN', 'https://127.0.0.1:2019'],
  ['SVC_CADDY_ADMIN', 'http://127.0.0.1:2019/config'],
  ['SVC_CADDY_ADMIN', 'caddy'],
  ['SVC_PROXY_HTTP_PORT', '0'],
  ['SVC_PROXY_HTTPS_PORT', '65536'],
  ['SVC_PROXY_HTTPS_PORT', '80'],
  ['SVC_ACME_CA', 'http://acme.example/dir'],
  ['SVC_ACME_CA', 'not a url'],
  ['SVC_ACME_CA_ROOT', '/nonexistent/ca.pem'],
  ['SVC_ACME_CA_ROOT', '/etc/hostname'],
  ['SVC_ACME_EMAIL', 'not-an-email'],
  ['SVC_DNS_RESOLVER', '8.8.8.8:99999'],
  ['SVC_DNS_RESOLVER', 'dns.example:53'],
  ['SVC_PUBLIC_IP', '203.0.113.1,example.com'],
  ['SVC_PUBLIC_IP', '10.0.0.0/8'],
  ['SVC_CONTROL_DOMAIN', 'https://svc.example.com'],
  ['SVC_BASE_DOMAIN', '*.example.com'],
];

for (const [name, value] of bad) {
  test(`${name}=${JSON.stringify(value)} is refused, naming the variable`, () => {
    assert.throws(
      () => loadConfig({ [name]: value }),
      (e: unknown) => e instanceof ConfigError && e.variable === name && e.message.startsWith(name),
    );
  });
}

test('the edge: defaults and accepted forms', () => {
  const c = loadConfig({});
  assert.deepEqual(c.proxy, {
    enabled: true,
    adminUrl: 'http://127.0.0.1:2019',
    httpPort: 80,
    httpsPort: 443,
    acmeCa: 'https://acme-v02.api.letsencrypt.org/directory',
    acmeCaRoot: null,
    acmeEmail: null,
    dnsResolver: null,
    publicIps: null,
    controlDomain: null,
    caddyStorage: '/var/lib/caddy/.local/share/caddy',
    resolverPort: 2053,
  });
  const d = loadConfig({
    SVC_PROXY: 'off',
    SVC_CADDY_ADMIN: 'http://localhost:2999/',
    SVC_PROXY_HTTP_PORT: '8080',
    SVC_PROXY_HTTPS_PORT: '8443',
    SVC_ACME_EMAIL: 'ops@example.com',
    SVC_DNS_RESOLVER: '[2001:db8::53]:5353',
    SVC_PUBLIC_IP: '203.0.113.1, 2001:DB8::1',
    SVC_CONTROL_DOMAIN: 'Panel.Example.com.',
    SVC_BASE_DOMAIN: 'Apps.Example.COM',
  });
  assert.equal(d.proxy.enabled, false);
  assert.equal(d.proxy.adminUrl, 'http://localhost:2999');
  assert.deepEqual([d.proxy.httpPort, d.proxy.httpsPort], [8080, 8443]);
  assert.equal(d.proxy.dnsResolver, '[2001:db8::53]:5353');
  assert.equal(loadConfig({ SVC_DNS_RESOLVER: '127.0.0.1:8053' }).proxy.dnsResolver, '127.0.0.1:8053');
  assert.equal(loadConfig({ SVC_DNS_RESOLVER: '9.9.9.9' }).proxy.dnsResolver, '9.9.9.9');
  assert.deepEqual(d.proxy.publicIps, ['203.0.113.1', '2001:db8::1']);
  assert.equal(d.proxy.controlDomain, 'panel.example.com');
  assert.equal(d.baseDomain, 'apps.example.com');
});

test('the service refuses to boot on a bad value and says which variable', () => {
  const cli = fileURLToPath(new URL('../../runtime/cli.js', import.meta.url));
  try {
    // A deadline: a regression that boots (and then serves forever) fails instead of hanging the run.
    execFileSync(process.execPath, [cli, 'serve'], {
      env: { ...process.env, SVC_SECURITY_MAX_IPS: '-1', SVC_ENV_FILE: '/nonexistent/svc.env' },
      stdio: 'pipe',
      timeout: 60_000,
      killSignal: 'SIGKILL',
    });
    assert.fail('booted');
  } catch (e) {
    const err = e as { status: number | null; signal: string | null; stderr: Buffer };
    assert.equal(err.signal, null, 'svc serve did not stop by itself within 60 s');
    assert.equal(err.status, 2);
    assert.match(err.stderr.toString(), /SVC_SECURITY_MAX_IPS/);
  }
});

test('the environment file is read like systemd reads it, and the process environment wins', async () => {
  const { parseEnvFile } = await import('#lib/config.js');
  const parsed = parseEnvFile(
    [
      '# comment',
      '; also a comment',
      'SVC_PORT=9400',
      'export SVC_HOST="127.0.0.1"',
      "SVC_BASE_DOMAIN='apps.example.com'",
      'SVC_METRICS_TOKEN = "a \\"quoted\\" token"',
      'not a line',
      '',
    ].join('\n'),
  );
  assert.deepEqual(parsed, {
    SVC_PORT: '9400',
    SVC_HOST: '127.0.0.1',
    SVC_BASE_DOMAIN: 'apps.example.com',
    SVC_METRICS_TOKEN: 'a "quoted" token',
  });
  const { loadHostConfig } = await import('../../runtime/host-config.js');
  const { mkdtemp, writeFile, rm } = await import('node:fs/promises');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const dir = await mkdtemp(join(tmpdir(), 'svc-envfile-'));
  try {
    await writeFile(join(dir, 'svc.env'), 'SVC_PORT=9400\nSVC_EXPOSURE=public\n');
    const h = loadHostConfig({ SVC_ENV_FILE: join(dir, 'svc.env'), SVC_PORT: '9500' });
    assert.equal(h.envFile, join(dir, 'svc.env'));
    assert.equal(h.config.port, 9500);
    assert.equal(h.config.exposure, 'public');
    assert.equal(loadHostConfig({ SVC_ENV_FILE: join(dir, 'missing.env') }).envFile, null);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('SVC_IMAGE_MAP: a JSON object of image references; anything else stops the boot naming it', () => {
  assert.deepEqual(loadConfig({}).imageMap, {});
  assert.deepEqual(
    loadConfig({ SVC_IMAGE_MAP: '{"postgres:15.8-bookworm":"mirror.local/postgres:15"}' }).imageMap,
    { 'postgres:15.8-bookworm': 'mirror.local/postgres:15' },
  );
  for (const bad of ['not json', '[]', '"x"', '{"a":1}', '{"a b":"c"}', '{"a":"-rm"}']) {
    assert.throws(
      () => loadConfig({ SVC_IMAGE_MAP: bad }),
      (e: unknown) => e instanceof ConfigError && e.variable === 'SVC_IMAGE_MAP',
      bad,
    );
  }
});

test('SVC_DATABASE_URL: a postgres:// URL puts the database on PostgreSQL; anything else stops the boot naming it', () => {
  assert.equal(loadConfig({}).databaseUrl, null);
  for (const url of ['postgres://svc:pw@127.0.0.1:5432/svc', 'postgresql://db.internal/svc?sslmode=require'])
    assert.equal(loadConfig({ SVC_DATABASE_URL: url }).databaseUrl, url);
  for (const bad of ['mysql://h/db', '/var/lib/svc/svc.db', 'postgres://has space/db'])
    assert.throws(
      () => loadConfig({ SVC_DATABASE_URL: bad }),
      (e: unknown) =>
        e instanceof ConfigError && /SVC_DATABASE_URL/.test(String(e)) && !String(e).includes(bad),
    );
});
